! Fortran client test of the `sptensor` module (tests/fortran/run_fortran_cpd.sh
! runs it after the `sptensor` CLI and passes the CLI's results):
!   cpd_check FILE CPD_FIT CPD_PREFIX TUCKER_FIT APR_LOGLIK
! FILE is nations.tns.xz (14 x 55 x 14, 1992 nonzeros). The CLI ran
!   sptensor cpd FILE -r 4 --iters 8 --tol 0 --seed 1 --threads 2 -o CPD_PREFIX
!   sptensor tucker FILE -r 3,4,3 --iters 5 --tol 0 --threads 2
!   sptensor cpd FILE -r 3 --iters 5 --tol 0 --seed 2 --model poisson --threads 2
! and printed CPD_FIT, TUCKER_FIT and APR_LOGLIK. This program does the same through the
! module and checks: the fits agree, lambda and every factor (copied out
! column-major) equal the CLI's factor files, an MTTKRP on Fortran arrays
! wrapped in place (SPT_COL_MAJOR, no copies) equals a plain loop over the
! tensor's nonzeros, a tensor built from 1-based Fortran subscripts equals
! the one read, and errors come back as status codes with messages. Also:
! a Fortran CP-ALS callback (c_funloc) sees every sweep, and CSF and HiCOO
! MTTKRPs write the same result into the wrapped arrays.
module cpd_check_callbacks
  use, intrinsic :: ieee_arithmetic, only: ieee_is_nan
  use sptensor
  implicit none
contains
  ! CP-ALS per-iteration callback (interface spt_cpd_callback): records the
  ! fits in the array that user_data points to.
  function record_fit(user_data, iteration, fit, delta, seconds) bind(c) result(stop_now)
    type(c_ptr), value :: user_data
    integer(c_int), value :: iteration
    real(c_double), value :: fit, delta, seconds
    integer(c_int) :: stop_now
    real(c_double), pointer :: fits(:)
    call c_f_pointer(user_data, fits, [8])
    if (iteration >= 1 .and. iteration <= 8) fits(iteration) = fit
    stop_now = 0
    if (ieee_is_nan(delta) .or. seconds < 0) stop_now = 1  ! NaN or a bad time: stop (the test then fails)
  end function
end module cpd_check_callbacks

program cpd_check
  use sptensor
  use spt_fortran_checks
  use cpd_check_callbacks
  implicit none

  integer, parameter :: dp = c_double
  integer, parameter :: rank = 4
  character(len=4096) :: path, prefix, arg
  real(dp) :: cli_fit, cli_tucker_fit, cli_apr_loglik
  type(c_ptr) :: ctx = c_null_ptr, x = c_null_ptr, y = c_null_ptr, k = c_null_ptr, t = c_null_ptr
  type(c_ptr) :: missing = c_null_ptr
  integer(c_int) :: st, dtype, iters, converged
  integer(c_int32_t) :: order, krank, m
  integer(c_int64_t) :: nnz
  type(spt_coo_summary) :: xinfo
  type(spt_ktensor_summary) :: kinfo
  type(spt_ttensor_summary) :: tinfo
  integer(c_int32_t) :: dims(3)
  real(dp) :: fit, norm_x, norm_y
  type(spt_cpd_options) :: copts
  type(spt_read_options), target :: ropts
  type(spt_tucker_options) :: topts
  real(c_double), target :: callback_fits(8) = -1
  procedure(spt_cpd_callback), pointer :: callback_check => record_fit  ! checks the interface matches
  integer(c_int) :: history_count
  type(c_ptr) :: history_fits, history_seconds
  real(c_double), pointer :: hist(:)
  integer(c_int32_t), target :: tranks(3) = [3, 4, 3]

  if (command_argument_count() /= 5) then
    print '(a)', 'usage: cpd_check FILE CPD_FIT CPD_PREFIX TUCKER_FIT APR_LOGLIK'
    stop 2
  end if
  call get_command_argument(1, path)
  call get_command_argument(2, arg)
  read (arg, *) cli_fit
  call get_command_argument(3, prefix)
  call get_command_argument(4, arg)
  read (arg, *) cli_tucker_fit
  call get_command_argument(5, arg)
  read (arg, *) cli_apr_loglik

  print '(a,a)', 'libsptensor ', sptf_version()
  call expect_status(spt_context_create(ctx), SPT_OK, 'spt_context_create')
  call expect_status(spt_context_set_threads(ctx, 2_c_int), SPT_OK, 'spt_context_set_threads')

  ! --- errors are status codes plus a message ---------------------------------
  st = sptf_read(ctx, trim(path) // '.does-not-exist', missing)
  call expect_status(st, SPT_ERR_IO, 'reading a missing file')
  call check(sptf_status_string(st) == 'SPT_ERR_IO', 'spt_status_string(SPT_ERR_IO)')
  call check(index(sptf_last_error(ctx), 'does-not-exist') > 0, 'last error names the file: ' // sptf_last_error(ctx))
  call check(.not. c_associated(missing), 'no handle on error')

  ! --- read (options struct through c_loc) -------------------------------------
  call expect_status(spt_read_options_init(ropts), SPT_OK, 'spt_read_options_init (struct size accepted)')
  call check(ropts%struct_size == c_sizeof(ropts), 'read options struct_size')
  call check(ropts%dtype == SPT_FLOAT64 .and. ropts%index_base == 1, 'read option defaults')
  call expect_status(sptf_read(ctx, path, x, ropts), SPT_OK, 'sptf_read')
  xinfo%struct_size = c_sizeof(xinfo)
  call expect_status(spt_coo_info(ctx, x, xinfo), SPT_OK, 'spt_coo_info')
  dtype = xinfo%dtype
  order = xinfo%order
  nnz = xinfo%nnz
  call check(dtype == SPT_FLOAT64 .and. order == 3 .and. nnz == 1992, 'nations: float64, order 3, 1992 nonzeros')
  call check(xinfo%struct_size == c_sizeof(xinfo) .and. xinfo%read_only == 0, 'coo summary: struct_size kept, owning')
  xinfo%struct_size = 0
  call expect_status(spt_coo_info(ctx, x, xinfo), SPT_ERR_INVALID_ARGUMENT, 'spt_coo_info with struct_size 0')
  call check(index(sptf_last_error(ctx), 'struct_size') > 0, 'struct_size 0 is named: ' // sptf_last_error(ctx))
  call expect_status(spt_coo_dims(x, dims), SPT_OK, 'spt_coo_dims')
  call check(all(dims == [14, 55, 14]), 'nations dims 14 x 55 x 14')
  call expect_status(spt_coo_norm(ctx, x, norm_x), SPT_OK, 'spt_coo_norm')

  call check_from_arrays()

  ! --- CP-ALS with the CLI's settings ------------------------------------------
  call expect_status(spt_cpd_options_init(copts), SPT_OK, 'spt_cpd_options_init (struct size accepted)')
  call check(copts%struct_size == c_sizeof(copts), 'cpd options struct_size')
  call check(copts%rank == 10 .and. copts%max_iters == 50 .and. abs(copts%tol - 1e-4_dp) < 1e-15_dp, &
             'cpd option defaults (rank 10, 50 iterations, tol 1e-4)')
  call check(copts%format == SPT_TENSOR_FORMAT_AUTO .and. copts%csf_policy == SPT_CSF_AUTO, 'cpd format defaults')
  copts%rank = rank
  copts%max_iters = 8
  copts%tol = 0
  copts%seed = 1
  copts%callback = c_funloc(callback_check)
  copts%callback_data = c_loc(callback_fits)
  call expect_status(spt_cpd_als(ctx, x, copts, k), SPT_WARN_NOT_CONVERGED, 'spt_cpd_als (tol 0: runs all sweeps)')
  call expect_status(spt_ktensor_history(k, history_count, history_fits, history_seconds), SPT_OK, &
                     'spt_ktensor_history')
  call check(history_count == 8, 'history has 8 sweeps')
  call c_f_pointer(history_fits, hist, [history_count])
  call check(maxval(abs(callback_fits - hist)) <= 0, 'the Fortran callback saw every sweep''s fit')
  call expect_status(spt_ktensor_result(k, fit, iters, converged), SPT_OK, 'spt_ktensor_result')
  print '(a,f14.10,a,f14.10)', 'fortran fit ', fit, '   cli fit ', cli_fit
  call check(abs(fit - cli_fit) <= 1e-8_dp, 'CP-ALS fit equals the CLI''s')
  call check(iters == 8 .and. converged == 0, '8 iterations, not converged')
  kinfo%struct_size = c_sizeof(kinfo)
  call expect_status(spt_ktensor_info(ctx, k, kinfo), SPT_OK, 'spt_ktensor_info')
  krank = kinfo%rank
  order = kinfo%order
  call check(krank == rank .and. order == 3, 'ktensor rank and order')
  call check(abs(kinfo%fit - fit) <= 0 .and. kinfo%iterations == 8 .and. kinfo%converged == 0, &
             'ktensor summary has spt_ktensor_result''s fit, iterations, converged')
  call check_model_against_files()
  call check_mttkrp()
  call check_float32()

  ! --- Tucker-HOOI -------------------------------------------------------------
  call expect_status(spt_tucker_options_init(topts), SPT_OK, 'spt_tucker_options_init')
  topts%ranks = c_loc(tranks)
  topts%ranks_count = 3
  topts%max_iters = 5
  topts%tol = 0
  call expect_status(spt_tucker_hooi(ctx, x, topts, t), SPT_WARN_NOT_CONVERGED, 'spt_tucker_hooi')
  if (c_associated(t)) then
    tinfo%struct_size = c_sizeof(tinfo)
    call expect_status(spt_ttensor_info(ctx, t, tinfo), SPT_OK, 'spt_ttensor_info')
    fit = tinfo%fit
    call check(tinfo%order == 3 .and. tinfo%iterations == 5 .and. tinfo%converged == 0, &
               'Tucker summary: order 3, 5 sweeps, not converged')
    print '(a,f14.10,a,f14.10)', 'fortran tucker fit ', fit, '   cli tucker fit ', cli_tucker_fit
    call check(abs(fit - cli_tucker_fit) <= 1e-8_dp, 'Tucker fit equals the CLI''s')
    call check_tucker_core()
  end if

  call check_cp_apr()

  call expect_status(spt_ttensor_free(t), SPT_OK, 'spt_ttensor_free')
  call expect_status(spt_ktensor_free(k), SPT_OK, 'spt_ktensor_free')
  call expect_status(spt_coo_free(y), SPT_OK, 'spt_coo_free')
  call expect_status(spt_coo_free(x), SPT_OK, 'spt_coo_free')
  call expect_status(spt_context_free(ctx), SPT_OK, 'spt_context_free')

  call finish_checks('fortran client')

contains



  ! A copy of x built from 1-based nnz x order subscripts (MATLAB's layout).
  subroutine check_from_arrays()
    integer(c_int32_t), allocatable, target :: subs(:, :)
    real(dp), allocatable, target :: vals(:)
    integer(c_int32_t), pointer :: idx(:)
    real(dp), pointer :: v(:)
    type(c_ptr) :: p
    integer(c_int32_t) :: ydims(3)
    allocate(subs(nnz, 3), vals(nnz))
    do m = 0, 2
      call expect_status(spt_coo_indices(x, m, p), SPT_OK, 'spt_coo_indices')
      call c_f_pointer(p, idx, [nnz])
      subs(:, m + 1) = idx + 1
    end do
    call expect_status(spt_coo_values(x, p), SPT_OK, 'spt_coo_values')
    call c_f_pointer(p, v, [nnz])
    vals = v
    call expect_status(sptf_coo_from_arrays(ctx, subs, vals, y), SPT_OK, 'sptf_coo_from_arrays')
    call expect_status(spt_coo_dims(y, ydims), SPT_OK, 'spt_coo_dims (from arrays)')
    call check(all(ydims == dims), 'dims inferred from 1-based subscripts')
    call expect_status(spt_coo_norm(ctx, y, norm_y), SPT_OK, 'spt_coo_norm (from arrays)')
    call check(abs(norm_y - norm_x) <= 1e-12_dp * norm_x, 'same norm as the tensor read')
    subs(1, 1) = 0  ! below base 1
    call expect_status(sptf_coo_from_arrays(ctx, subs, vals, p), SPT_ERR_INVALID_ARGUMENT, 'subscript 0 rejected')
  end subroutine

  ! lambda and factors against the CLI's PREFIX.lambda.txt / PREFIX.mode-K.txt.
  subroutine check_model_against_files()
    real(dp) :: lambda(rank), file_lambda(rank)
    real(dp), allocatable :: a(:, :), b(:, :)
    integer :: u, i, mode
    character(len=16) :: num
    call expect_status(sptf_ktensor_lambda(k, lambda), SPT_OK, 'sptf_ktensor_lambda')
    open (newunit=u, file=trim(prefix) // '.lambda.txt', status='old', action='read')
    read (u, *) file_lambda
    close (u)
    call check(maxval(abs(lambda - file_lambda)) <= 1e-9_dp * maxval(abs(file_lambda)), 'lambda equals the CLI''s')
    do mode = 0, 2
      allocate(a(dims(mode + 1), rank), b(dims(mode + 1), rank))
      call expect_status(sptf_ktensor_factor(k, mode, a), SPT_OK, 'sptf_ktensor_factor')
      write (num, '(i0)') mode + 1
      open (newunit=u, file=trim(prefix) // '.mode-' // trim(num) // '.txt', status='old', action='read')
      do i = 1, int(dims(mode + 1))
        read (u, *) b(i, :)
      end do
      close (u)
      call check(maxval(abs(a - b)) <= 1e-9_dp, 'factor ' // trim(num) // ' equals the CLI''s (column-major copy)')
      deallocate(a, b)
    end do
  end subroutine

  ! MTTKRP in every mode with Fortran arrays wrapped in place.
  subroutine check_mttkrp()
    real(dp), allocatable, target :: a1(:, :), a2(:, :), a3(:, :), out(:, :), want(:, :)
    type(c_ptr) :: factors(3), mout, pa2, csf, hic
    type(spt_hicoo_options), target :: hopts
    type(spt_csf_options), target :: copts
    integer(c_int32_t), pointer :: i1(:), i2(:), i3(:)
    real(dp), pointer :: v(:)
    type(c_ptr) :: p
    integer(c_int64_t) :: e
    integer :: mode
    allocate(a1(dims(1), rank), a2(dims(2), rank), a3(dims(3), rank))
    call expect_status(sptf_ktensor_factor(k, 0, a1), SPT_OK, 'factor 1')
    call expect_status(sptf_ktensor_factor(k, 1, a2), SPT_OK, 'factor 2')
    call expect_status(sptf_ktensor_factor(k, 2, a3), SPT_OK, 'factor 3')
    call expect_status(sptf_matrix_wrap(ctx, a1, factors(1)), SPT_OK, 'wrap a1')
    call expect_status(sptf_matrix_wrap(ctx, a2, factors(2)), SPT_OK, 'wrap a2')
    call expect_status(sptf_matrix_wrap(ctx, a3, factors(3)), SPT_OK, 'wrap a3')
    call expect_status(spt_matrix_data(factors(2), p), SPT_OK, 'spt_matrix_data')
    pa2 = c_loc(a2)  ! (a temporary: c_associated(p, c_loc(a2)) crashes gfortran 12)
    call check(c_associated(p, pa2), 'wrapped matrix uses the Fortran array''s memory')
    call expect_status(spt_coo_indices(x, 0_c_int32_t, p), SPT_OK, 'indices 0')
    call c_f_pointer(p, i1, [nnz])
    call expect_status(spt_coo_indices(x, 1_c_int32_t, p), SPT_OK, 'indices 1')
    call c_f_pointer(p, i2, [nnz])
    call expect_status(spt_coo_indices(x, 2_c_int32_t, p), SPT_OK, 'indices 2')
    call c_f_pointer(p, i3, [nnz])
    call expect_status(spt_coo_values(x, p), SPT_OK, 'values')
    call c_f_pointer(p, v, [nnz])
    call expect_status(spt_csf_options_init(copts), SPT_OK, 'spt_csf_options_init')
    copts%policy = SPT_CSF_ALLMODE
    call expect_status(spt_csf_from_coo(ctx, x, c_loc(copts), csf), SPT_OK, 'spt_csf_from_coo')
    call expect_status(spt_hicoo_options_init(hopts), SPT_OK, 'spt_hicoo_options_init')
    hopts%block_size = 4
    call expect_status(spt_hicoo_from_coo(ctx, x, c_loc(hopts), hic), SPT_OK, 'spt_hicoo_from_coo (B = 4)')
    do mode = 1, 3
      allocate(out(dims(mode), rank), want(dims(mode), rank))
      out = -1
      want = 0
      do e = 1, nnz
        select case (mode)
        case (1)
          want(i1(e) + 1, :) = want(i1(e) + 1, :) + v(e) * a2(i2(e) + 1, :) * a3(i3(e) + 1, :)
        case (2)
          want(i2(e) + 1, :) = want(i2(e) + 1, :) + v(e) * a1(i1(e) + 1, :) * a3(i3(e) + 1, :)
        case (3)
          want(i3(e) + 1, :) = want(i3(e) + 1, :) + v(e) * a1(i1(e) + 1, :) * a2(i2(e) + 1, :)
        end select
      end do
      call expect_status(sptf_matrix_wrap(ctx, out, mout), SPT_OK, 'wrap out')
      call expect_status(spt_mttkrp(ctx, x, factors, int(mode - 1, c_int32_t), mout), SPT_OK, 'spt_mttkrp')
      call check(maxval(abs(out - want)) <= 1e-10_dp * max(1.0_dp, maxval(abs(want))), &
                 'MTTKRP written into the Fortran array equals a loop over nonzeros')
      out = -1
      call expect_status(spt_mttkrp_csf(ctx, csf, factors, int(mode - 1, c_int32_t), mout), SPT_OK, 'spt_mttkrp_csf')
      call check(maxval(abs(out - want)) <= 1e-10_dp * max(1.0_dp, maxval(abs(want))), 'CSF MTTKRP equals the loop')
      out = -1
      call expect_status(spt_mttkrp_hicoo(ctx, hic, factors, int(mode - 1, c_int32_t), mout), SPT_OK, &
                         'spt_mttkrp_hicoo')
      call check(maxval(abs(out - want)) <= 1e-10_dp * max(1.0_dp, maxval(abs(want))), 'HiCOO MTTKRP equals the loop')
      call expect_status(spt_matrix_free(mout), SPT_OK, 'spt_matrix_free')
      deallocate(out, want)
    end do
    do mode = 1, 3
      call expect_status(spt_matrix_free(factors(mode)), SPT_OK, 'spt_matrix_free')
    end do
    call expect_status(spt_csf_free(csf), SPT_OK, 'spt_csf_free')
    call expect_status(spt_hicoo_free(hic), SPT_OK, 'spt_hicoo_free')
  end subroutine

  ! float32: a tensor from real(c_float) values, MTTKRP on wrapped
  ! real(c_float) arrays, and a float32 CP-ALS close to the float64 fit.
  subroutine check_float32()
    integer(c_int32_t), allocatable, target :: subs(:, :)
    real(c_float), allocatable, target :: vals(:), a2(:, :), a3(:, :), out(:, :)
    real(dp), allocatable :: want(:, :)
    real(dp), allocatable :: b2(:, :), b3(:, :)
    integer(c_int32_t), pointer :: idx(:)
    real(dp), pointer :: v(:)
    type(c_ptr) :: p, x32, k32, factors(3), mout
    integer(c_int64_t) :: e
    real(dp) :: fit32
    integer(c_int) :: it32, conv32
    allocate(subs(nnz, 3), vals(nnz))
    do m = 0, 2
      call expect_status(spt_coo_indices(x, m, p), SPT_OK, 'spt_coo_indices')
      call c_f_pointer(p, idx, [nnz])
      subs(:, m + 1) = idx + 1
    end do
    call expect_status(spt_coo_values(x, p), SPT_OK, 'spt_coo_values')
    call c_f_pointer(p, v, [nnz])
    vals = real(v, c_float)
    call expect_status(sptf_coo_from_arrays(ctx, subs, vals, x32, dims), SPT_OK, 'sptf_coo_from_arrays (float32)')
    allocate(b2(dims(2), rank), b3(dims(3), rank), want(dims(1), rank), out(dims(1), rank))
    call expect_status(sptf_ktensor_factor(k, 1, b2), SPT_OK, 'factor 2')
    call expect_status(sptf_ktensor_factor(k, 2, b3), SPT_OK, 'factor 3')
    a2 = real(b2, c_float)
    a3 = real(b3, c_float)
    want = 0
    do e = 1, nnz
      want(subs(e, 1), :) = want(subs(e, 1), :) + vals(e) * real(a2(subs(e, 2), :), dp) * real(a3(subs(e, 3), :), dp)
    end do
    factors(1) = c_null_ptr  ! the output mode's factor is not read
    call expect_status(sptf_matrix_wrap(ctx, a2, factors(2)), SPT_OK, 'wrap float32 a2')
    call expect_status(sptf_matrix_wrap(ctx, a3, factors(3)), SPT_OK, 'wrap float32 a3')
    call expect_status(sptf_matrix_wrap(ctx, out, mout), SPT_OK, 'wrap float32 out')
    call expect_status(spt_mttkrp(ctx, x32, factors, 0_c_int32_t, mout), SPT_OK, 'spt_mttkrp (float32)')
    call check(maxval(abs(out - want)) <= 1e-5_dp * maxval(abs(want)), 'float32 MTTKRP equals the loop')
    call expect_status(spt_cpd_als(ctx, x32, copts, k32), SPT_WARN_NOT_CONVERGED, 'spt_cpd_als (float32)')
    call expect_status(spt_ktensor_result(k32, fit32, it32, conv32), SPT_OK, 'spt_ktensor_result (float32)')
    call check(abs(fit32 - cli_fit) <= 1e-4_dp, 'float32 CP-ALS fit close to the float64 one')
    call expect_status(spt_ktensor_free(k32), SPT_OK, 'spt_ktensor_free')
    call expect_status(spt_matrix_free(mout), SPT_OK, 'spt_matrix_free')
    call expect_status(spt_matrix_free(factors(2)), SPT_OK, 'spt_matrix_free')
    call expect_status(spt_matrix_free(factors(3)), SPT_OK, 'spt_matrix_free')
    call expect_status(spt_coo_free(x32), SPT_OK, 'spt_coo_free')
  end subroutine

  ! CP-APR with the CLI's --model poisson settings.
  subroutine check_cp_apr()
    type(spt_cp_apr_options) :: aopts
    type(c_ptr) :: apr
    real(dp) :: loglik
    integer(c_int) :: it, conv
    apr = c_null_ptr
    call expect_status(spt_cp_apr_options_init(aopts), SPT_OK, 'spt_cp_apr_options_init')
    call check(aopts%max_inner_iters == 10 .and. abs(aopts%kappa - 0.01_dp) < 1e-15_dp, 'CP-APR option defaults')
    aopts%rank = 3
    aopts%max_outer_iters = 5
    aopts%tol = 0
    aopts%seed = 2
    call expect_status(spt_cp_apr(ctx, x, aopts, apr), SPT_WARN_NOT_CONVERGED, 'spt_cp_apr')
    call expect_status(spt_ktensor_result(apr, loglik, it, conv), SPT_OK, 'spt_ktensor_result (CP-APR)')
    call check_cli_value('log-likelihood', loglik, cli_apr_loglik, 'CP-APR log-likelihood equals the CLI''s')
    call expect_status(spt_ktensor_free(apr), SPT_OK, 'spt_ktensor_free')
  end subroutine

  ! The core is stored first index fastest: it maps onto a Fortran array.
  subroutine check_tucker_core()
    integer(c_int32_t) :: cdims(3)
    type(c_ptr) :: p
    real(dp), pointer :: core(:, :, :)
    call expect_status(spt_ttensor_core_dims(t, cdims, c_null_ptr), SPT_OK, 'spt_ttensor_core_dims')
    call check(all(cdims == tranks), 'core dims 3 x 4 x 3')
    call expect_status(spt_ttensor_core(t, p), SPT_OK, 'spt_ttensor_core')
    call c_f_pointer(p, core, cdims)
    ! fit = 1 - sqrt(||X||^2 - ||G||^2) / ||X|| (orthonormal factors)
    call check(abs((1 - sqrt(abs(norm_x**2 - sum(core**2))) / norm_x) - fit) <= 1e-8_dp, &
               'core norm consistent with the fit')
  end subroutine

end program cpd_check
