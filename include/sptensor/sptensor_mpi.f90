! libsptensor_mpi: Fortran 2008 module over the distributed C API
! (sptensor_mpi.h), with iso_c_binding.
!
!   use mpi              ! or mpi_f08 (pass comm%MPI_VAL)
!   use sptensor
!   use sptensor_mpi
!
! Build (installed library, gfortran, Open MPI):
!   mpifort prog.f90 -I$prefix/include -L$prefix/lib \
!     -lsptensor_mpi_fortran -lsptensor_fortran -lsptensor_mpi -lsptensor
! The installed include/sptensor_mpi.mod and lib/libsptensor_mpi_fortran.a
! are gfortran's; with another compiler, compile this file (installed as
! include/sptensor/sptensor_mpi.f90) together with sptensor.f90.
!
! Communicators: the C API takes MPI_Comm, whose C type differs between MPI
! libraries, so this module binds the *_fcomm entry points of
! libsptensor_mpi, which take the communicator's Fortran handle (MPI_Fint)
! and convert it with MPI_Comm_f2c. Pass an integer communicator from
! `use mpi` (MPI_COMM_WORLD, or one from MPI_Comm_dup/MPI_Comm_split) or
! comm%MPI_VAL of a type(MPI_Comm) from `use mpi_f08`. The interfaces keep
! the C names with the _fcomm suffix; sptf_mpi_read takes a Fortran string.
! The module itself does not use the mpi module, so it does not depend on
! how the MPI Fortran bindings were compiled.
!
! Everything else follows the sptensor module: handles are type(c_ptr),
! status codes integer(c_int) (SPT_OK, SPT_WARN_NOT_CONVERGED, SPT_ERR_MPI,
! ...), modes 0-based, option structs bind(c) with a Fortran
! spt_mpi_cpd_options_init(opts). A distributed CP model's local part
! (spt_mpi_ktensor_local) is an spt_ktensor handle: spt_ktensor_result,
! spt_ktensor_history, sptf_ktensor_lambda work on it. Error messages: with
! a context, sptf_last_error(ctx); without, sptf_mpi_thread_last_error().
!
! Collective functions (read, create, cpd_als, the gathers) must be called
! by every rank of the communicator, as in C (see sptensor_mpi.h).
module sptensor_mpi
  use, intrinsic :: iso_c_binding
  use sptensor, only: spt_read_options
  implicit none
  private :: c_strlen_mpi

  ! sptensor_mpi.h constants.
  integer(c_int), parameter, public :: SPT_MPI_MAX_ORDER = 16
  ! spt_mpi_decomposition
  integer(c_int), parameter, public :: SPT_MPI_MEDIUM_GRAINED = 0
  integer(c_int), parameter, public :: SPT_MPI_COARSE_GRAINED = 1

  ! spt_mpi_cpd_options: always call spt_mpi_cpd_options_init(opts) first.
  ! grid: c_null_ptr or c_loc of `order` integer(c_int) grid sizes;
  ! init_factors: c_loc of `order` matrix handles (full dims x rank, same on
  ! every rank); callback: c_funloc of a function with the
  ! spt_mpi_cpd_callback interface below.
  type, bind(c), public :: spt_mpi_cpd_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int32_t) :: rank = 0
    integer(c_int) :: max_iters = 0
    real(c_double) :: tol = 0
    integer(c_int) :: init = 0                ! SPT_CPD_INIT_*
    integer(c_int64_t) :: seed = 0
    type(c_ptr) :: init_factors = c_null_ptr
    integer(c_int) :: format = 0              ! SPT_TENSOR_FORMAT_*
    integer(c_int) :: decomposition = 0       ! SPT_MPI_MEDIUM_GRAINED / SPT_MPI_COARSE_GRAINED
    type(c_ptr) :: grid = c_null_ptr
    type(c_funptr) :: callback = c_null_funptr
    type(c_ptr) :: callback_data = c_null_ptr
  end type spt_mpi_cpd_options

  ! spt_mpi_tensor_info's output: set struct_size = c_sizeof(info) first.
  type, bind(c), public :: spt_mpi_tensor_summary
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: order = 0
    integer(c_int64_t) :: global_nnz = 0
    integer(c_int64_t) :: local_nnz = 0
  end type spt_mpi_tensor_summary

  ! spt_mpi_cpd_stats (set struct_size = c_sizeof(stats) before
  ! spt_mpi_ktensor_stats). grid(n+1) is mode n's process count.
  type, bind(c), public :: spt_mpi_cpd_stats
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: ranks = 0
    integer(c_int32_t) :: order = 0
    integer(c_int) :: grid(16) = 0
    integer(c_int64_t) :: nnz_min = 0
    integer(c_int64_t) :: nnz_max = 0
    real(c_double) :: nnz_imbalance = 0
    real(c_double) :: bytes_per_iteration = 0
    real(c_double) :: bytes_reduce_per_iteration = 0
    real(c_double) :: bytes_expand_per_iteration = 0
    real(c_double) :: bytes_allreduce_per_iteration = 0
    real(c_double) :: max_rank_bytes_per_iteration = 0
    real(c_double) :: model_bytes_per_iteration = 0
    real(c_double) :: dense_bound_bytes_per_iteration = 0
    integer(c_int64_t) :: setup_bytes = 0
    real(c_double) :: setup_seconds = 0
    real(c_double) :: seconds_per_iteration = 0
    integer(c_int64_t) :: local_nnz = 0
    integer(c_int64_t) :: local_factor_rows = 0
    real(c_double) :: mttkrp_seconds_per_iteration = 0
    real(c_double) :: exchange_seconds_per_iteration = 0
    real(c_double) :: allreduce_seconds_per_iteration = 0
  end type spt_mpi_cpd_stats

  ! What the per-iteration callback receives (spt_mpi_iteration_info).
  type, bind(c), public :: spt_mpi_iteration_info
    integer(c_int) :: iteration = 0
    real(c_double) :: fit = 0
    real(c_double) :: delta = 0
    real(c_double) :: seconds = 0
    real(c_double) :: bytes = 0
    real(c_double) :: bytes_reduce = 0
    real(c_double) :: bytes_expand = 0
    real(c_double) :: bytes_allreduce = 0
  end type spt_mpi_iteration_info

  ! Per-iteration callback (spt_mpi_cpd_callback): called on every rank
  ! after each sweep; return non-zero to stop. Must not call MPI on the
  ! CP-ALS communicator.
  abstract interface
    function spt_mpi_cpd_callback(user_data, info) bind(c) result(stop_now)
      import :: c_ptr, c_int, spt_mpi_iteration_info
      type(c_ptr), value :: user_data
      type(spt_mpi_iteration_info), intent(in) :: info
      integer(c_int) :: stop_now
    end function
  end interface

  interface
    ! --- collective, communicator as a Fortran handle -------------------------
    ! dims: c_null_ptr (inferred) or c_loc of `order` dims; indices/values:
    ! this rank's nonzeros as in spt_coo_create_from_arrays (c_loc of TARGET
    ! arrays, or c_null_ptr when local_nnz is 0).
    function spt_mpi_tensor_create_fcomm(comm, ctx, dtype, order, dims, local_nnz, indices, ld, index_base, values, &
                                         flags, out) bind(c, name="spt_mpi_tensor_create_fcomm") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      integer(c_int), value :: comm
      type(c_ptr), value :: ctx
      integer(c_int), value :: dtype
      integer(c_int32_t), value :: order
      type(c_ptr), value :: dims
      integer(c_int64_t), value :: local_nnz
      type(c_ptr), value :: indices
      integer(c_int64_t), value :: ld
      integer(c_int), value :: index_base
      type(c_ptr), value :: values
      integer(c_int), value :: flags
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! path: NUL-terminated (see sptf_mpi_read); opts: c_null_ptr or c_loc of
    ! a TARGET spt_read_options.
    function spt_mpi_read_fcomm(comm, ctx, path, opts, out) bind(c, name="spt_mpi_read_fcomm") result(st)
      import :: c_ptr, c_int, c_char
      integer(c_int), value :: comm
      type(c_ptr), value :: ctx
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), value :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! out: a new COO tensor on root, c_null_ptr elsewhere.
    function spt_mpi_tensor_gather_fcomm(comm, ctx, x, root, out) bind(c, name="spt_mpi_tensor_gather_fcomm") result(st)
      import :: c_ptr, c_int
      integer(c_int), value :: comm
      type(c_ptr), value :: ctx, x
      integer(c_int), value :: root
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    function spt_mpi_cpd_als_fcomm(comm, ctx, x, opts, out) bind(c, name="spt_mpi_cpd_als_fcomm") result(st)
      import :: c_ptr, c_int, spt_mpi_cpd_options
      integer(c_int), value :: comm
      type(c_ptr), value :: ctx, x
      type(spt_mpi_cpd_options), intent(in) :: opts
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function
    ! out: a new full spt_ktensor on root (spt_ktensor_free), c_null_ptr elsewhere.
    function spt_mpi_ktensor_gather_fcomm(comm, ctx, k, root, out) bind(c, name="spt_mpi_ktensor_gather_fcomm") &
        result(st)
      import :: c_ptr, c_int
      integer(c_int), value :: comm
      type(c_ptr), value :: ctx, k
      integer(c_int), value :: root
      type(c_ptr), intent(out) :: out
      integer(c_int) :: st
    end function

    ! --- local ----------------------------------------------------------------
    function spt_mpi_thread_last_error() bind(c, name="spt_mpi_thread_last_error") result(s)
      import :: c_ptr
      type(c_ptr) :: s
    end function
    function spt_mpi_tensor_free(x) bind(c, name="spt_mpi_tensor_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      integer(c_int) :: st
    end function
    function spt_mpi_tensor_info(ctx, x, info) bind(c, name="spt_mpi_tensor_info") result(st)
      import :: spt_mpi_tensor_summary, c_ptr, c_int
      type(c_ptr), value :: ctx, x
      type(spt_mpi_tensor_summary), intent(inout) :: info
      integer(c_int) :: st
    end function
    function spt_mpi_tensor_dims(x, dims) bind(c, name="spt_mpi_tensor_dims") result(st)
      import :: c_ptr, c_int, c_int32_t
      type(c_ptr), value :: x
      integer(c_int32_t), intent(out) :: dims(*)
      integer(c_int) :: st
    end function
    ! local: a borrowed spt_coo of this rank's nonzeros (global coordinates).
    function spt_mpi_tensor_local(x, local) bind(c, name="spt_mpi_tensor_local") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: x
      type(c_ptr), intent(out) :: local
      integer(c_int) :: st
    end function
    function spt_mpi_cpd_options_init_size(opts, struct_size) bind(c, name="spt_mpi_cpd_options_init_size") result(st)
      import :: spt_mpi_cpd_options, c_size_t, c_int
      type(spt_mpi_cpd_options), intent(inout) :: opts
      integer(c_size_t), value :: struct_size
      integer(c_int) :: st
    end function
    function spt_mpi_ktensor_free(k) bind(c, name="spt_mpi_ktensor_free") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: k
      integer(c_int) :: st
    end function
    ! local: a borrowed spt_ktensor (lambda, result record, this rank's rows).
    function spt_mpi_ktensor_local(k, local) bind(c, name="spt_mpi_ktensor_local") result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: k
      type(c_ptr), intent(out) :: local
      integer(c_int) :: st
    end function
    ! rows: borrowed array of `count` 0-based global row numbers (uint64).
    function spt_mpi_ktensor_rows(k, mode, rows, count) bind(c, name="spt_mpi_ktensor_rows") result(st)
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: k
      integer(c_int32_t), value :: mode
      type(c_ptr), intent(out) :: rows
      integer(c_int64_t), intent(out) :: count
      integer(c_int) :: st
    end function
    function spt_mpi_ktensor_stats(k, stats) bind(c, name="spt_mpi_ktensor_stats") result(st)
      import :: c_ptr, c_int, spt_mpi_cpd_stats
      type(c_ptr), value :: k
      type(spt_mpi_cpd_stats), intent(inout) :: stats
      integer(c_int) :: st
    end function

    function c_strlen_mpi(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

contains

  !> Fill opts with the distributed CP-ALS defaults (C macro
  !> spt_mpi_cpd_options_init).
  function spt_mpi_cpd_options_init(opts) result(st)
    type(spt_mpi_cpd_options), intent(inout) :: opts
    integer(c_int) :: st
    st = spt_mpi_cpd_options_init_size(opts, c_sizeof(opts))
  end function

  !> Collective. Read a tensor file in parallel (spt_mpi_read) over the
  !> communicator with Fortran handle `comm`; trailing blanks of `path` are
  !> ignored; opts optional (spt_read_options of the sptensor module).
  function sptf_mpi_read(comm, ctx, path, x, opts) result(st)
    integer, intent(in) :: comm
    type(c_ptr), intent(in) :: ctx
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: x
    type(spt_read_options), intent(in), optional, target :: opts
    integer(c_int) :: st
    type(c_ptr) :: popts
    popts = c_null_ptr
    if (present(opts)) popts = c_loc(opts)
    st = spt_mpi_read_fcomm(int(comm, c_int), ctx, trim(path) // c_null_char, popts, x)
  end function

  !> The calling thread's last libsptensor_mpi error (calls with a NULL
  !> context), as a Fortran string (a copy).
  function sptf_mpi_thread_last_error() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, i
    p = spt_mpi_thread_last_error()
    if (.not. c_associated(p)) then
      msg = ''
      return
    end if
    n = int(c_strlen_mpi(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function

end module sptensor_mpi
