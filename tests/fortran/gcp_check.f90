! Fortran client test of GCP through the `sptensor` module
! (tests/fortran/run_fortran_gcp.sh runs it after the `sptensor` CLI):
!   gcp_check FILE OPT_OBJECTIVE SGD_ESTIMATE
! FILE is nations.tns.xz (binary, 14 x 55 x 14). The CLI ran
!   sptensor cpd FILE -r 3 --iters 20 --seed 1 --threads 2 --model gcp --loss bernoulli
!   sptensor cpd FILE -r 3 --iters 4 --seed 1 --threads 2 --model gcp --loss bernoulli --optimizer sgd
!                --epoch-iters 50 --rate 0.01
! and printed OPT_OBJECTIVE and SGD_ESTIMATE. This program runs both through
! spt_gcp_opt and checks: the same objective and estimate, the iteration and
! epoch counts, histories that never rise, spt_gcp_objective of the GCP-OPT
! model equal to its reported objective, and an SGD option error as a
! status code with a message.
program gcp_check
  use sptensor
  use spt_fortran_checks
  implicit none

  integer, parameter :: dp = c_double
  character(len=4096) :: path, arg
  real(dp) :: cli_objective, cli_estimate, objective, again
  type(c_ptr) :: ctx = c_null_ptr, x = c_null_ptr, k = c_null_ptr
  type(spt_gcp_options) :: opts
  integer(c_int) :: iters, converged, history_count
  type(c_ptr) :: history_values, history_seconds
  real(c_double), pointer :: hist(:)

  if (command_argument_count() /= 3) then
    print '(a)', 'usage: gcp_check FILE OPT_OBJECTIVE SGD_ESTIMATE'
    stop 2
  end if
  call get_command_argument(1, path)
  call get_command_argument(2, arg)
  read (arg, *) cli_objective
  call get_command_argument(3, arg)
  read (arg, *) cli_estimate

  call expect_status(spt_context_create(ctx), SPT_OK, 'spt_context_create')
  call expect_status(spt_context_set_threads(ctx, 2_c_int), SPT_OK, 'spt_context_set_threads')
  call expect_status(sptf_read(ctx, path, x), SPT_OK, 'sptf_read')

  ! --- GCP-OPT (L-BFGS-B), Bernoulli-logit --------------------------------------
  call expect_status(spt_gcp_options_init(opts), SPT_OK, 'spt_gcp_options_init')
  call check(opts%struct_size == c_sizeof(opts), 'gcp options struct_size')
  call check(opts%optimizer == SPT_GCP_OPTIMIZER_LBFGSB .and. opts%max_iters == 1000 .and. opts%epoch_iters == 1000, &
             'gcp option defaults (L-BFGS-B, 1000 iterations, 1000 steps per SGD epoch)')
  opts%rank = 3
  opts%loss = SPT_GCP_LOSS_BERNOULLI_LOGIT
  opts%max_iters = 20
  opts%seed = 1
  call expect_status(spt_gcp_opt(ctx, x, opts, k), SPT_WARN_NOT_CONVERGED, 'spt_gcp_opt (20 iterations)')
  call expect_status(spt_ktensor_result(k, objective, iters, converged), SPT_OK, 'spt_ktensor_result')
  call check_cli_value('gcp objective', objective, cli_objective, 'GCP-OPT objective equals the CLI''s')
  call check(iters == 20 .and. converged == 0, 'GCP-OPT ran 20 iterations')
  call expect_status(spt_ktensor_history(k, history_count, history_values, history_seconds), SPT_OK, 'history')
  call c_f_pointer(history_values, hist, [history_count])
  call check(history_count == 20 .and. all(hist(2:) <= hist(:history_count - 1)), 'GCP-OPT objective never rises')
  call expect_status(spt_gcp_objective(ctx, x, k, opts, again), SPT_OK, 'spt_gcp_objective')
  call check(abs(again - objective) <= 1e-12_dp * abs(objective), 'spt_gcp_objective of the model is its objective')
  call expect_status(spt_ktensor_free(k), SPT_OK, 'spt_ktensor_free')
  k = c_null_ptr

  ! --- GCP-SGD (Adam, stratified samples), the CLI's settings ------------------
  opts%optimizer = SPT_GCP_OPTIMIZER_SGD
  opts%max_iters = 4
  opts%epoch_iters = 50
  opts%rate = 0.01_dp
  call expect_status(spt_gcp_opt(ctx, x, opts, k), SPT_WARN_NOT_CONVERGED, 'spt_gcp_opt (GCP-SGD, 4 epochs)')
  call expect_status(spt_ktensor_result(k, objective, iters, converged), SPT_OK, 'spt_ktensor_result (GCP-SGD)')
  call check_cli_value('gcp-sgd estimate', objective, cli_estimate, 'GCP-SGD estimate equals the CLI''s')
  call expect_status(spt_ktensor_history(k, history_count, history_values, history_seconds), SPT_OK, 'history')
  call c_f_pointer(history_values, hist, [history_count])
  call check(history_count == iters .and. iters >= 1 .and. iters <= 4, 'GCP-SGD history has one estimate per epoch')
  if (history_count > 1) call check(all(hist(2:) <= hist(:history_count - 1)), 'GCP-SGD kept estimate never rises')
  call expect_status(spt_ktensor_free(k), SPT_OK, 'spt_ktensor_free')
  k = c_null_ptr

  opts%rate = 0
  call expect_status(spt_gcp_opt(ctx, x, opts, k), SPT_ERR_INVALID_ARGUMENT, 'GCP-SGD with rate 0')
  call check(index(sptf_last_error(ctx), 'rate') > 0, 'the error names the rate: ' // sptf_last_error(ctx))
  call check(.not. c_associated(k), 'no model on error')

  call expect_status(spt_coo_free(x), SPT_OK, 'spt_coo_free')
  call expect_status(spt_context_free(ctx), SPT_OK, 'spt_context_free')
  call finish_checks('fortran gcp')
end program gcp_check
