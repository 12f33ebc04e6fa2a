! libsptensor: Fortran 2008 module over the C ABI (iso_c_binding).
!
!   use sptensor
!
! Build (installed library, gfortran):
!   gfortran prog.f90 $(pkg-config --cflags --libs sptensor-fortran)
! or in CMake: find_package(sptensor) and link sptensor::sptensor_fortran.
! The installed include/sptensor.mod, include/sptensor_capi.mod and
! lib/libsptensor_fortran.a (this module's own procedures) are gfortran's;
! with another compiler, compile include/sptensor/sptensor_capi.f90 and then
! this file (include/sptensor/sptensor.f90) with your program and link
! -lsptensor.
!
! Two files, one module for users:
!  - sptensor_capi.f90 (module sptensor_capi) is GENERATED from the C
!    headers by scripts/gen_bindings.py: every enumerator and numeric
!    #define as a named constant (SPT_OK, SPT_ERR_PARSE, SPT_FLOAT64, ...),
!    every struct as a bind(c) derived type with the C layout (set
!    info%struct_size = c_sizeof(info) before an spt_X_info call), every
!    callback typedef as an abstract interface (spt_cpd_callback,
!    spt_progress_fn, ...), every function as a bind(c) interface under its
!    C name returning the spt_status as integer(c_int), and
!    spt_<x>_options_init(opts) (the C header's macros: they call
!    spt_<x>_options_init_size(opts, c_sizeof(opts))). Its head comment
!    gives the argument conventions: handles are type(c_ptr), modes are
!    0-based, strings passed to the raw interfaces end in c_null_char,
!    unsigned C integers map to the signed kind of the same size, and
!    arguments the header documents as optional are type(c_ptr) (c_loc or
!    c_null_ptr).
!  - This file (module sptensor) re-exports all of it and adds Fortran
!    conveniences, sptf_* procedures that take Fortran strings and arrays:
!      sptf_read / sptf_write           (Fortran strings for paths)
!      sptf_last_error, sptf_thread_last_error, sptf_status_string, sptf_version
!      sptf_matrix_wrap(ctx, a, m)      (wraps a 2-D real array in place, column-major)
!      sptf_coo_from_arrays(ctx, subs, vals, x [, dims])   (1-based nnz x order subs)
!      sptf_ktensor_lambda(k, lambda), sptf_ktensor_factor(k, mode, a),
!      sptf_matrix_copy(m, a)           (float64 copies into Fortran arrays)
!      sptf_context_backend_info(ctx, info), sptf_c_chars(info%device_name)
!  The distributed API (sptensor_mpi.h) is the separate module sptensor_mpi
!  (sptensor_mpi.f90, built when MPI is).
!
! Avoiding copies: sptf_matrix_wrap passes the array's storage to the library
! with the SPT_COL_MAJOR layout flag and ld = size(a, 1), so factor matrices
! and MTTKRP outputs are read and written in place. The array must be
! contiguous and have the TARGET attribute, and it must stay alive (and not be
! reallocated) until spt_matrix_free on the wrapping handle.
!
! Thread safety: as in C (see sptensor.h): distinct handles may be used from
! different threads; one handle must not be used by two threads at once.
module sptensor
  ! The C ABI itself (constants, bind(c) types, interfaces), generated from
  ! the C headers by scripts/gen_bindings.py into sptensor_capi.f90;
  ! re-exported here, so `use sptensor` gives all of it.
  use sptensor_capi
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_strlen, from_c_string, to_c_string, coo_from_arrays

  interface
    ! strlen of the C library, for strings the library returns
    function c_strlen(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

  ! Wrap a contiguous 2-D real(c_double) or real(c_float) array in place.
  interface sptf_matrix_wrap
    module procedure sptf_matrix_wrap_f64, sptf_matrix_wrap_f32
  end interface sptf_matrix_wrap
  interface sptf_coo_from_arrays
    module procedure sptf_coo_from_arrays_f64, sptf_coo_from_arrays_f32
  end interface sptf_coo_from_arrays

contains












  ! ==========================================================================
  ! Strings
  ! ==========================================================================

  function from_c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  function to_c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function

  !> The last error message recorded in ctx ('' if none; with c_null_ptr the
  !> calling thread's last error). A copy: stays valid.
  function sptf_last_error(ctx) result(msg)
    type(c_ptr), intent(in) :: ctx
    character(len=:), allocatable :: msg
    msg = from_c_string(spt_last_error(ctx))
  end function

  !> The calling thread's last error message (copy).
  function sptf_thread_last_error() result(msg)
    character(len=:), allocatable :: msg
    msg = from_c_string(spt_thread_last_error())
  end function

  !> Constant name of a status code, e.g. 'SPT_ERR_PARSE'.
  function sptf_status_string(status) result(name)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: name
    name = from_c_string(spt_status_string(status))
  end function

  !> Version string of the loaded library, e.g. '0.1.0'.
  function sptf_version() result(v)
    character(len=:), allocatable :: v
    v = from_c_string(spt_version())
  end function

  ! ==========================================================================
  ! File I/O with Fortran strings (trailing blanks of `path` are ignored)
  ! ==========================================================================

  !> Read a tensor file (any format spt_read accepts, compressed or not).
  !> opts is optional (defaults: float64, 1-based text, format detected).
  function sptf_read(ctx, path, x, opts) result(st)
    type(c_ptr), intent(in) :: ctx
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: x
    type(spt_read_options), intent(in), optional, target :: opts
    integer(c_int) :: st
    type(c_ptr) :: popts
    popts = c_null_ptr
    if (present(opts)) popts = c_loc(opts)
    st = spt_read(ctx, to_c_string(path), popts, x)
  end function

  !> Write a tensor; the format and compression follow the extension unless
  !> opts says otherwise.
  function sptf_write(ctx, x, path, opts) result(st)
    type(c_ptr), intent(in) :: ctx, x
    character(len=*), intent(in) :: path
    type(spt_write_options), intent(in), optional, target :: opts
    integer(c_int) :: st
    type(c_ptr) :: popts
    popts = c_null_ptr
    if (present(opts)) popts = c_loc(opts)
    st = spt_write(ctx, x, to_c_string(path), popts)
  end function

  ! ==========================================================================
  ! Arrays
  ! ==========================================================================

  !> m = a matrix handle over the storage of `a` (no copy; SPT_COL_MAJOR,
  !> ld = size(a,1)). Free m with spt_matrix_free before `a` goes away.
  function sptf_matrix_wrap_f64(ctx, a, m) result(st)
    type(c_ptr), intent(in) :: ctx
    real(c_double), intent(inout), contiguous, target :: a(:, :)
    type(c_ptr), intent(out) :: m
    integer(c_int) :: st
    st = spt_matrix_wrap(ctx, SPT_FLOAT64, int(size(a, 1), c_int64_t), int(size(a, 2), c_int64_t), &
                         SPT_COL_MAJOR, c_loc(a), int(max(1, size(a, 1)), c_int64_t), m)
  end function

  function sptf_matrix_wrap_f32(ctx, a, m) result(st)
    type(c_ptr), intent(in) :: ctx
    real(c_float), intent(inout), contiguous, target :: a(:, :)
    type(c_ptr), intent(out) :: m
    integer(c_int) :: st
    st = spt_matrix_wrap(ctx, SPT_FLOAT32, int(size(a, 1), c_int64_t), int(size(a, 2), c_int64_t), &
                         SPT_COL_MAJOR, c_loc(a), int(max(1, size(a, 1)), c_int64_t), m)
  end function

  !> New tensor from 1-based subscripts subs(nnz, order) (MATLAB's layout)
  !> and values vals(nnz); dims inferred from the largest subscripts unless
  !> given. The library copies the arrays (it indexes them directly, no
  !> reordering on the Fortran side).
  function sptf_coo_from_arrays_f64(ctx, subs, vals, x, dims) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    real(c_double), intent(in), contiguous, target :: vals(:)
    type(c_ptr), intent(out) :: x
    integer(c_int32_t), intent(in), optional, target :: dims(:)
    integer(c_int) :: st
    type(c_ptr) :: pdims
    pdims = c_null_ptr
    if (present(dims)) pdims = c_loc(dims)
    st = coo_from_arrays(ctx, SPT_FLOAT64, subs, size(vals), c_loc(vals), pdims, x)
  end function

  function sptf_coo_from_arrays_f32(ctx, subs, vals, x, dims) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    real(c_float), intent(in), contiguous, target :: vals(:)
    type(c_ptr), intent(out) :: x
    integer(c_int32_t), intent(in), optional, target :: dims(:)
    integer(c_int) :: st
    type(c_ptr) :: pdims
    pdims = c_null_ptr
    if (present(dims)) pdims = c_loc(dims)
    st = coo_from_arrays(ctx, SPT_FLOAT32, subs, size(vals), c_loc(vals), pdims, x)
  end function

  function coo_from_arrays(ctx, dtype, subs, nvals, pvals, pdims, x) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int), intent(in) :: dtype
    integer(c_int32_t), intent(in), contiguous, target :: subs(:, :)
    integer, intent(in) :: nvals
    type(c_ptr), intent(in) :: pvals, pdims
    type(c_ptr), intent(out) :: x
    integer(c_int) :: st
    x = c_null_ptr
    if (size(subs, 1) /= nvals) then
      st = SPT_ERR_INVALID_ARGUMENT  ! shape mismatch caught before the C call
      return
    end if
    st = spt_coo_create_from_arrays(ctx, dtype, int(size(subs, 2), c_int32_t), pdims, int(nvals, c_int64_t), &
                                    c_loc(subs), int(max(1, size(subs, 1)), c_int64_t), 1_c_int, pvals, &
                                    SPT_COO_DEFAULT, x)
  end function

  !> Copy the float64 ktensor's lambda into lambda(1:rank).
  function sptf_ktensor_lambda(k, lambda) result(st)
    type(c_ptr), intent(in) :: k
    real(c_double), intent(out) :: lambda(:)
    integer(c_int) :: st
    type(spt_ktensor_summary) :: info
    type(c_ptr) :: p
    real(c_double), pointer :: l(:)
    info%struct_size = c_sizeof(info)
    st = spt_ktensor_info(c_null_ptr, k, info)
    if (st /= SPT_OK) return
    if (info%dtype /= SPT_FLOAT64 .or. size(lambda) < info%rank) then
      st = SPT_ERR_INVALID_ARGUMENT
      return
    end if
    st = spt_ktensor_lambda(k, p)
    if (st /= SPT_OK) return
    call c_f_pointer(p, l, [info%rank])
    lambda(1:info%rank) = l
  end function

  !> Copy factor `mode` (0-based) of a float64 ktensor (or any float64
  !> matrix handle, with sptf_matrix_copy) into a(dims(mode+1), rank).
  function sptf_ktensor_factor(k, mode, a) result(st)
    type(c_ptr), intent(in) :: k
    integer, intent(in) :: mode
    real(c_double), intent(out), contiguous, target :: a(:, :)
    integer(c_int) :: st
    type(c_ptr) :: m
    st = spt_ktensor_factor(k, int(mode, c_int32_t), m)
    if (st /= SPT_OK) return
    st = sptf_matrix_copy(m, a)
  end function

  !> Copy a float64 matrix handle into a(rows, cols) (column-major).
  function sptf_matrix_copy(m, a) result(st)
    type(c_ptr), intent(in) :: m
    real(c_double), intent(out), contiguous, target :: a(:, :)
    integer(c_int) :: st
    type(spt_matrix_summary) :: info
    info%struct_size = c_sizeof(info)
    st = spt_matrix_info(c_null_ptr, m, info)
    if (st /= SPT_OK) return
    if (info%dtype /= SPT_FLOAT64 .or. size(a, 1) /= info%rows .or. size(a, 2) /= info%cols) then
      st = SPT_ERR_INVALID_ARGUMENT
      return
    end if
    st = spt_matrix_copy_out(m, SPT_COL_MAJOR, c_loc(a), int(max(1_c_int64_t, info%rows), c_int64_t))
  end function


  !> info filled by spt_context_backend_info (struct_size set here), for ctx
  !> (c_null_ptr: the defaults).
  function sptf_context_backend_info(ctx, info) result(st)
    type(c_ptr), intent(in) :: ctx
    type(spt_backend_info), intent(out) :: info
    integer(c_int) :: st
    info%struct_size = c_sizeof(info)
    st = spt_context_backend_info(ctx, info)
  end function

  !> A character array field of spt_backend_info (device_name, plugin_path,
  !> reason) as a Fortran string, up to its NUL.
  function sptf_c_chars(chars) result(s)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: s
    integer :: n, i
    n = 0
    do i = 1, size(chars)
      if (chars(i) == c_null_char) exit
      n = i
    end do
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

end module sptensor
