! Fortran client test of the sptensor_mpi module (ctest fortran_mpi_cpd):
!   mpirun -np 2 mpi_cpd_check FILE
! FILE is nations.tns.xz. On a duplicate of MPI_COMM_WORLD (a communicator
! handle other than MPI_COMM_WORLD's) every rank reads its part
! (sptf_mpi_read), runs the distributed CP-ALS (medium- and coarse-grained)
! with rank 4, 8 sweeps, tol 0, seed 1, and rank 0 runs the serial
! spt_cpd_als with the same settings. Checks: the distributed fit equals the
! serial one (1e-10, as tests/mpi), the gathered model's lambda and factors
! equal the serial model's, every nonzero is on exactly one rank, a tensor
! built from rank-local arrays gives the same fit, the run's statistics
! describe 2 ranks, and errors (a bad grid, MPI_COMM_NULL, a call before
! MPI_Init: SPT_ERR_MPI) come back as the
! same status on every rank. Rank 0 prints the verdict; the exit status is
! non-zero on every rank when any rank failed.
program mpi_cpd_check
  use mpi
  use sptensor
  use sptensor_mpi
  implicit none

  integer, parameter :: dp = c_double
  integer, parameter :: rank = 4
  integer :: ierr, me, nranks, comm, failures = 0, all_failures
  character(len=4096) :: path
  type(c_ptr) :: ctx = c_null_ptr, x = c_null_ptr, k = c_null_ptr, kl = c_null_ptr, full = c_null_ptr
  type(c_ptr) :: serial_x = c_null_ptr, serial_k = c_null_ptr, gathered = c_null_ptr, local = c_null_ptr
  integer(c_int) :: dtype, it, conv
  integer(c_int32_t) :: order
  integer(c_int32_t), target :: dims(3)
  integer(c_int64_t) :: global_nnz, local_nnz, total_nnz
  type(spt_mpi_tensor_summary) :: xinfo
  real(dp) :: fit, serial_fit, coarse_fit, local_fit
  type(spt_mpi_cpd_options) :: mopts
  type(spt_cpd_options) :: copts
  type(spt_mpi_cpd_stats) :: stats
  integer(c_int) :: before_init

  ! Before MPI_Init a Fortran handle cannot be converted: SPT_ERR_MPI, no crash.
  before_init = spt_mpi_read_fcomm(0_c_int, c_null_ptr, 'x.tns' // c_null_char, c_null_ptr, x)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  if (command_argument_count() /= 1) then
    if (me == 0) print '(a)', 'usage: mpirun -np P mpi_cpd_check FILE'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, path)
  call check(before_init == SPT_ERR_MPI .and. .not. c_associated(x), 'before MPI_Init: SPT_ERR_MPI ("' // &
             sptf_mpi_thread_last_error() // '")')
  call expect_status(spt_context_create(ctx), SPT_OK, 'spt_context_create')
  call expect_status(spt_context_set_threads(ctx, 1_c_int), SPT_OK, 'spt_context_set_threads')

  ! --- read in parallel ------------------------------------------------------
  call expect_status(sptf_mpi_read(comm, ctx, path, x), SPT_OK, 'sptf_mpi_read')
  xinfo%struct_size = c_sizeof(xinfo)
  call expect_status(spt_mpi_tensor_info(ctx, x, xinfo), SPT_OK, 'spt_mpi_tensor_info')
  dtype = xinfo%dtype
  order = xinfo%order
  global_nnz = xinfo%global_nnz
  local_nnz = xinfo%local_nnz
  call expect_status(spt_mpi_tensor_dims(x, dims), SPT_OK, 'spt_mpi_tensor_dims')
  call check(dtype == SPT_FLOAT64 .and. order == 3 .and. global_nnz == 1992 .and. all(dims == [14, 55, 14]), &
             'distributed nations: float64, 14 x 55 x 14, 1992 nonzeros')
  call MPI_Allreduce(local_nnz, total_nnz, 1, MPI_INTEGER8, MPI_SUM, comm, ierr)
  call check(total_nnz == global_nnz, 'every nonzero is on exactly one rank')
  call expect_status(spt_mpi_tensor_local(x, local), SPT_OK, 'spt_mpi_tensor_local')
  block
    type(spt_coo_summary) :: linfo
    linfo%struct_size = c_sizeof(linfo)
    call expect_status(spt_coo_info(ctx, local, linfo), SPT_OK, 'spt_coo_info (local part)')
    call check(linfo%nnz == local_nnz .and. linfo%order == 3, 'the local part is a COO tensor of the local nonzeros')
  end block

  ! --- distributed CP-ALS ------------------------------------------------------
  call expect_status(spt_mpi_cpd_options_init(mopts), SPT_OK, 'spt_mpi_cpd_options_init')
  call check(mopts%struct_size == c_sizeof(mopts) .and. mopts%rank == 10 .and. mopts%max_iters == 50 .and. &
             abs(mopts%tol - 1e-4_dp) < 1e-15_dp .and. mopts%decomposition == SPT_MPI_MEDIUM_GRAINED .and. &
             .not. c_associated(mopts%grid), 'distributed options: defaults (layout matches the C struct)')
  mopts%rank = rank
  mopts%max_iters = 8
  mopts%tol = 0
  mopts%seed = 1
  call expect_status(spt_mpi_cpd_als_fcomm(int(comm, c_int), ctx, x, mopts, k), SPT_WARN_NOT_CONVERGED, &
                     'spt_mpi_cpd_als_fcomm (medium-grained)')
  call expect_status(spt_mpi_ktensor_local(k, kl), SPT_OK, 'spt_mpi_ktensor_local')
  call expect_status(spt_ktensor_result(kl, fit, it, conv), SPT_OK, 'spt_ktensor_result (distributed)')
  call check(it == 8 .and. conv == 0, '8 sweeps, not converged')
  stats%struct_size = c_sizeof(stats)
  call expect_status(spt_mpi_ktensor_stats(k, stats), SPT_OK, 'spt_mpi_ktensor_stats')
  call MPI_Allreduce(stats%local_nnz, total_nnz, 1, MPI_INTEGER8, MPI_SUM, comm, ierr)
  call check(stats%ranks == nranks .and. stats%order == 3 .and. product(stats%grid(1:3)) == nranks .and. &
             total_nnz == global_nnz, 'statistics: ranks, order, grid and local nonzeros')
  block
    type(c_ptr) :: rows
    integer(c_int64_t) :: count, total
    call expect_status(spt_mpi_ktensor_rows(k, 1_c_int32_t, rows, count), SPT_OK, 'spt_mpi_ktensor_rows')
    call MPI_Allreduce(count, total, 1, MPI_INTEGER8, MPI_SUM, comm, ierr)
    call check(total == 55, 'every row of factor 2 has one owner')
  end block
  call expect_status(spt_mpi_ktensor_gather_fcomm(int(comm, c_int), ctx, k, 0_c_int, full), SPT_OK, &
                     'spt_mpi_ktensor_gather_fcomm')
  call check(c_associated(full) .eqv. (me == 0), 'the gathered model is on rank 0 only')

  ! The same with the coarse-grained decomposition.
  mopts%decomposition = SPT_MPI_COARSE_GRAINED
  block
    type(c_ptr) :: kc, kcl
    call expect_status(spt_mpi_cpd_als_fcomm(int(comm, c_int), ctx, x, mopts, kc), SPT_WARN_NOT_CONVERGED, &
                       'spt_mpi_cpd_als_fcomm (coarse-grained)')
    call expect_status(spt_mpi_ktensor_local(kc, kcl), SPT_OK, 'local')
    call expect_status(spt_ktensor_result(kcl, coarse_fit, it, conv), SPT_OK, 'result (coarse)')
    call expect_status(spt_mpi_ktensor_free(kc), SPT_OK, 'spt_mpi_ktensor_free')
  end block
  mopts%decomposition = SPT_MPI_MEDIUM_GRAINED

  ! A tensor from rank-local arrays: rank r takes nonzeros r+1, r+1+P, ...
  call expect_status(spt_mpi_tensor_gather_fcomm(int(comm, c_int), ctx, x, 0_c_int, gathered), SPT_OK, &
                     'spt_mpi_tensor_gather_fcomm')
  call check(c_associated(gathered) .eqv. (me == 0), 'the gathered tensor is on rank 0 only')
  call check_local_arrays()

  ! --- errors: the same status on every rank --------------------------------------
  block
    type(c_ptr) :: bad
    integer(c_int), target :: grid(3)
    grid = [3, 1, 1]  ! product 3 /= 2 ranks
    mopts%grid = c_loc(grid)
    bad = c_null_ptr
    call expect_status(spt_mpi_cpd_als_fcomm(int(comm, c_int), ctx, x, mopts, bad), SPT_ERR_INVALID_ARGUMENT, &
                       'a grid whose product is not P is rejected on every rank')
    call check(index(sptf_last_error(ctx), 'grid') > 0, 'the message names the grid: ' // sptf_last_error(ctx))
    mopts%grid = c_null_ptr
    call expect_status(spt_mpi_cpd_als_fcomm(int(MPI_COMM_NULL, c_int), c_null_ptr, x, mopts, bad), &
                       SPT_ERR_INVALID_ARGUMENT, 'MPI_COMM_NULL rejected')
    call check(len(sptf_mpi_thread_last_error()) > 0, 'message in the thread slot without a context: ' // &
               sptf_mpi_thread_last_error())
    call check(.not. c_associated(bad), 'no handle on error')
  end block

  ! --- the serial run on rank 0 ---------------------------------------------------
  if (me == 0) then
    call expect_status(sptf_read(ctx, path, serial_x), SPT_OK, 'sptf_read (serial)')
    call expect_status(spt_cpd_options_init(copts), SPT_OK, 'spt_cpd_options_init')
    copts%rank = rank
    copts%max_iters = 8
    copts%tol = 0
    copts%seed = 1
    call expect_status(spt_cpd_als(ctx, serial_x, copts, serial_k), SPT_WARN_NOT_CONVERGED, 'spt_cpd_als (serial)')
    call expect_status(spt_ktensor_result(serial_k, serial_fit, it, conv), SPT_OK, 'spt_ktensor_result (serial)')
    print '(a,i0,a,f16.12,a,f16.12,a,f16.12,a,f16.12)', 'P = ', nranks, ': distributed fit ', fit, &
      '  coarse ', coarse_fit, '  from local arrays ', local_fit, '  serial ', serial_fit
    call check(abs(fit - serial_fit) <= 1e-10_dp, 'distributed CP-ALS fit equals the serial fit')
    call check(abs(coarse_fit - serial_fit) <= 1e-10_dp, 'coarse-grained fit equals the serial fit')
    call check(abs(local_fit - serial_fit) <= 1e-10_dp, 'fit of the tensor from local arrays equals the serial fit')
    call compare_models()
    call expect_status(spt_ktensor_free(serial_k), SPT_OK, 'free')
    call expect_status(spt_coo_free(serial_x), SPT_OK, 'free')
  end if

  call expect_status(spt_ktensor_free(full), SPT_OK, 'spt_ktensor_free (gathered)')
  call expect_status(spt_coo_free(gathered), SPT_OK, 'spt_coo_free (gathered)')
  call expect_status(spt_mpi_ktensor_free(k), SPT_OK, 'spt_mpi_ktensor_free')
  call expect_status(spt_mpi_tensor_free(x), SPT_OK, 'spt_mpi_tensor_free')
  call expect_status(spt_context_free(ctx), SPT_OK, 'spt_context_free')

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
  call MPI_Comm_free(comm, ierr)
  if (me == 0) then
    if (all_failures == 0) then
      print '(a,i0,a)', 'fortran mpi (P = ', nranks, '): all checks passed'
    else
      print '(i0,a)', all_failures, ' check(s) FAILED (all ranks)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_failures > 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      if (me == 0) print '(a,a)', 'ok    ', what
    else
      print '(a,i0,a,a)', 'FAIL  [rank ', me, '] ', what
      failures = failures + 1
    end if
  end subroutine

  subroutine expect_status(got, want, what)
    integer(c_int), intent(in) :: got, want
    character(len=*), intent(in) :: what
    if (got /= want) then
      print '(a,i0,a,a,a,a,a,a,a,a)', 'FAIL  [rank ', me, '] ', what, ': got ', sptf_status_string(got), &
            ', expected ', sptf_status_string(want), ': ', sptf_last_error(ctx)
      failures = failures + 1
    end if
  end subroutine

  ! Rank r builds its part from nonzeros r+1, r+1+P, ... of the gathered
  ! tensor (broadcast from rank 0 as arrays), with 1-based subscripts.
  subroutine check_local_arrays()
    integer(c_int64_t) :: n, e, mine
    integer(c_int32_t), allocatable, target :: subs(:, :), all_subs(:, :)
    real(dp), allocatable, target :: vals(:), all_vals(:)
    integer(c_int32_t), pointer :: idx(:)
    real(dp), pointer :: v(:)
    type(c_ptr) :: p, y, ky, kyl
    type(spt_mpi_tensor_summary) :: yinfo
    integer :: m
    n = global_nnz
    allocate(all_subs(n, 3), all_vals(n))
    if (me == 0) then
      do m = 0, 2
        call expect_status(spt_coo_indices(gathered, int(m, c_int32_t), p), SPT_OK, 'indices')
        call c_f_pointer(p, idx, [n])
        all_subs(:, m + 1) = idx + 1
      end do
      call expect_status(spt_coo_values(gathered, p), SPT_OK, 'values')
      call c_f_pointer(p, v, [n])
      all_vals = v
    end if
    call MPI_Bcast(all_subs, int(3 * n), MPI_INTEGER4, 0, comm, ierr)
    call MPI_Bcast(all_vals, int(n), MPI_DOUBLE_PRECISION, 0, comm, ierr)
    mine = 0
    do e = me + 1, n, nranks
      mine = mine + 1
    end do
    allocate(subs(max(mine, 1_c_int64_t), 3), vals(max(mine, 1_c_int64_t)))
    mine = 0
    do e = me + 1, n, nranks
      mine = mine + 1
      subs(mine, :) = all_subs(e, :)
      vals(mine) = all_vals(e)
    end do
    call expect_status(spt_mpi_tensor_create_fcomm(int(comm, c_int), ctx, SPT_FLOAT64, 3_c_int32_t, c_loc(dims), mine, &
                                                   c_loc(subs), int(size(subs, 1), c_int64_t), 1_c_int, c_loc(vals), &
                                                   SPT_COO_DEFAULT, y), SPT_OK, 'spt_mpi_tensor_create_fcomm')
    yinfo%struct_size = c_sizeof(yinfo)
    call expect_status(spt_mpi_tensor_info(ctx, y, yinfo), SPT_OK, 'info')
    call check(yinfo%global_nnz == global_nnz .and. yinfo%local_nnz == mine, &
               'tensor from local arrays: global and local counts')
    call expect_status(spt_mpi_cpd_als_fcomm(int(comm, c_int), ctx, y, mopts, ky), SPT_WARN_NOT_CONVERGED, &
                       'spt_mpi_cpd_als_fcomm (tensor from local arrays)')
    call expect_status(spt_mpi_ktensor_local(ky, kyl), SPT_OK, 'local')
    call expect_status(spt_ktensor_result(kyl, local_fit, it, conv), SPT_OK, 'result')
    call expect_status(spt_mpi_ktensor_free(ky), SPT_OK, 'free')
    call expect_status(spt_mpi_tensor_free(y), SPT_OK, 'free')
  end subroutine

  ! The gathered distributed model against the serial one (rank 0).
  subroutine compare_models()
    real(dp) :: l1(rank), l2(rank)
    real(dp), allocatable :: a(:, :), b(:, :)
    integer :: mode
    call expect_status(sptf_ktensor_lambda(full, l1), SPT_OK, 'lambda (gathered)')
    call expect_status(sptf_ktensor_lambda(serial_k, l2), SPT_OK, 'lambda (serial)')
    call check(maxval(abs(l1 - l2)) <= 1e-8_dp * maxval(abs(l2)), 'gathered lambda equals the serial lambda')
    do mode = 0, 2
      allocate(a(dims(mode + 1), rank), b(dims(mode + 1), rank))
      call expect_status(sptf_ktensor_factor(full, mode, a), SPT_OK, 'factor (gathered)')
      call expect_status(sptf_ktensor_factor(serial_k, mode, b), SPT_OK, 'factor (serial)')
      call check(maxval(abs(a - b)) <= 1e-7_dp, 'gathered factor equals the serial factor')
      deallocate(a, b)
    end do
  end subroutine

end program mpi_cpd_check
