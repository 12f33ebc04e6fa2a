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
! and include/sptensor_mpi_capi.mod are gfortran's; with another compiler,
! compile include/sptensor/sptensor_mpi_capi.f90 and then this file
! (include/sptensor/sptensor_mpi.f90) after sptensor_capi.f90 and
! sptensor.f90.
!
! The constants, bind(c) types and interfaces are GENERATED from
! sptensor_mpi.h by scripts/gen_bindings.py into module sptensor_mpi_capi
! (sptensor_mpi_capi.f90), which this module re-exports; here are only the
! Fortran conveniences (sptf_mpi_read, sptf_mpi_thread_last_error).
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
  ! The distributed C API itself, generated (sptensor_mpi_capi.f90); re-exported.
  use sptensor_mpi_capi
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_strlen_mpi

  interface
    ! strlen of the C library, for the strings the library returns
    function c_strlen_mpi(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

contains


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
