! The README's Fortran example: read a tensor, run CP-ALS, print the fit and
! the first column of the mode-1 factor. Built against the installed library
! by run_fortran_client_test.sh (pkg-config sptensor-fortran, and CMake
! find_package(sptensor) with target sptensor::sptensor_fortran).
!   client_example FILE.tns[.xz]
program client_example
  use sptensor
  implicit none
  type(c_ptr) :: ctx = c_null_ptr, x = c_null_ptr, model = c_null_ptr
  type(spt_cpd_options) :: opts
  character(len=1024) :: path
  integer(c_int) :: st, iters, converged
  integer(c_int32_t) :: dims(3)
  real(c_double) :: fit
  real(c_double), allocatable :: a(:, :)

  call get_command_argument(1, path)
  st = spt_context_create(ctx)
  st = sptf_read(ctx, path, x)
  if (st /= SPT_OK) then
    print '(a)', 'read failed: ' // sptf_last_error(ctx)
    error stop 1
  end if
  st = spt_cpd_options_init(opts)
  opts%rank = 4
  opts%seed = 1
  st = spt_cpd_als(ctx, x, opts, model)
  if (st < 0) then
    print '(a)', sptf_status_string(st) // ': ' // sptf_last_error(ctx)
    error stop 1
  end if
  st = spt_ktensor_result(model, fit, iters, converged)
  print '(a,f6.4,a,i0,a)', 'fit ', fit, ' after ', iters, ' iterations'
  st = spt_coo_dims(x, dims)
  allocate(a(dims(1), opts%rank))
  st = sptf_ktensor_factor(model, 0, a)  ! modes are 0-based as in C
  print '(a,*(1x,f7.4))', 'A1(:,1) =', a(:, 1)
  st = spt_ktensor_free(model)
  st = spt_coo_free(x)
  st = spt_context_free(ctx)
end program client_example
