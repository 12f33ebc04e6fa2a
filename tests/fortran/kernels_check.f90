! Fortran client test of the bindings beyond CP/Tucker (ctest fortran_kernels):
!   kernels_check FILE
! FILE is nations.tns.xz (14 x 55 x 14, 1992 nonzeros, float64). Every
! result computed through the module is compared with a plain Fortran loop
! over the nonzeros (the known value) or with the C library's own result on
! another path:
!  - backend info (struct layout and strings), set_backend / set_device;
!  - TTV (one mode, chain, all modes), TTM (COO, semi-sparse, chain), the
!    semi-sparse accessors, elementwise ops, the CSR unfolding, Khatri-Rao;
!  - F-COO: MTTKRP equal to spt_mttkrp, TTM equal to spt_ttm, TTMc equal to
!    the loop, info/dims/to_coo, the threadlen rule;
!  - dense tensors: densify equals the loop (and maps onto a Fortran array),
!    norm, create_copy from a Fortran array, to_coo, the Tucker core;
!  - reordering: LEXI permutations are permutations, relabel + inverse
!    restores the tensor, factor rows permuted and unpermuted, ktensor
!    unpermute; format advice, CSF and HiCOO statistics, CP-APR log-likelihood.
program kernels_check
  use sptensor
  use spt_fortran_checks
  implicit none

  integer, parameter :: dp = c_double
  integer, parameter :: rank = 3
  character(len=4096) :: path
  type(c_ptr) :: ctx = c_null_ptr, x = c_null_ptr
  integer(c_int) :: dtype
  integer(c_int32_t) :: order
  integer(c_int64_t) :: nnz
  integer(c_int32_t) :: dims(3)
  integer(c_int32_t), pointer :: i1(:), i2(:), i3(:)
  real(dp), pointer :: v(:)
  real(dp), allocatable :: dense(:, :, :)
  real(dp) :: norm_x
  type(c_ptr) :: p
  integer(c_int64_t) :: e

  if (command_argument_count() /= 1) then
    print '(a)', 'usage: kernels_check FILE'
    stop 2
  end if
  call get_command_argument(1, path)
  call expect_status(spt_context_create(ctx), SPT_OK, 'spt_context_create')
  call expect_status(spt_context_set_threads(ctx, 2_c_int), SPT_OK, 'spt_context_set_threads')
  call expect_status(sptf_read(ctx, path, x), SPT_OK, 'sptf_read')
  call coo_shape(x, dtype, order, nnz, 'spt_coo_info')
  call expect_status(spt_coo_dims(x, dims), SPT_OK, 'spt_coo_dims')
  call check(order == 3 .and. all(dims == [14, 55, 14]), 'nations read')
  call expect_status(spt_coo_norm(ctx, x, norm_x), SPT_OK, 'spt_coo_norm')
  call expect_status(spt_coo_indices(x, 0_c_int32_t, p), SPT_OK, 'indices 0')
  call c_f_pointer(p, i1, [nnz])
  call expect_status(spt_coo_indices(x, 1_c_int32_t, p), SPT_OK, 'indices 1')
  call c_f_pointer(p, i2, [nnz])
  call expect_status(spt_coo_indices(x, 2_c_int32_t, p), SPT_OK, 'indices 2')
  call c_f_pointer(p, i3, [nnz])
  call expect_status(spt_coo_values(x, p), SPT_OK, 'values')
  call c_f_pointer(p, v, [nnz])
  allocate(dense(dims(1), dims(2), dims(3)))
  dense = 0
  do e = 1, nnz
    dense(i1(e) + 1, i2(e) + 1, i3(e) + 1) = dense(i1(e) + 1, i2(e) + 1, i3(e) + 1) + v(e)
  end do

  call check_backend()
  call check_ttv()
  call check_ttm()
  call check_fcoo()
  call check_hbcsf()
  call check_hls()
  call check_dense()
  call check_reorder()
  call check_misc()

  call expect_status(spt_coo_free(x), SPT_OK, 'spt_coo_free')
  call expect_status(spt_context_free(ctx), SPT_OK, 'spt_context_free')
  call finish_checks('fortran kernels')

contains

  ! The fields of spt_coo_info's summary (struct_size set here), checked.
  subroutine coo_shape(y, dt, o, n, what)
    type(c_ptr), intent(in) :: y
    integer(c_int), intent(out) :: dt
    integer(c_int32_t), intent(out) :: o
    integer(c_int64_t), intent(out) :: n
    character(*), intent(in) :: what
    type(spt_coo_summary) :: s
    s%struct_size = c_sizeof(s)
    call expect_status(spt_coo_info(ctx, y, s), SPT_OK, what)
    dt = s%dtype
    o = s%order
    n = s%nnz
  end subroutine

  logical function close_to(a, b, rel)
    real(dp), intent(in) :: a(:), b(:)
    real(dp), intent(in) :: rel
    close_to = size(a) == size(b)
    if (close_to) close_to = maxval(abs(a - b)) <= rel * max(1.0_dp, maxval(abs(b)))
  end function

  ! A deterministic test matrix n x r (column-major Fortran array).
  subroutine fill(a, seed)
    real(dp), intent(out) :: a(:, :)
    integer, intent(in) :: seed
    integer :: i, j
    do j = 1, size(a, 2)
      do i = 1, size(a, 1)
        a(i, j) = sin(real(seed * 131 + i * 17 + j * 7, dp))
      end do
    end do
  end subroutine

  ! A COO tensor densified into a 3-D Fortran array (dims of x).
  subroutine densify(y, out)
    type(c_ptr), intent(in) :: y
    real(dp), intent(out) :: out(:, :, :)
    integer(c_int32_t), pointer :: j1(:), j2(:), j3(:)
    real(dp), pointer :: w(:)
    integer(c_int64_t) :: n, k
    integer(c_int) :: dt
    integer(c_int32_t) :: o
    type(c_ptr) :: q
    out = 0
    call coo_shape(y, dt, o, n, 'spt_coo_info (densify)')
    if (o /= 3 .or. n == 0) return
    call expect_status(spt_coo_indices(y, 0_c_int32_t, q), SPT_OK, 'indices')
    call c_f_pointer(q, j1, [n])
    call expect_status(spt_coo_indices(y, 1_c_int32_t, q), SPT_OK, 'indices')
    call c_f_pointer(q, j2, [n])
    call expect_status(spt_coo_indices(y, 2_c_int32_t, q), SPT_OK, 'indices')
    call c_f_pointer(q, j3, [n])
    call expect_status(spt_coo_values(y, q), SPT_OK, 'values')
    call c_f_pointer(q, w, [n])
    do k = 1, n
      out(j1(k) + 1, j2(k) + 1, j3(k) + 1) = out(j1(k) + 1, j2(k) + 1, j3(k) + 1) + w(k)
    end do
  end subroutine

  subroutine check_backend()
    type(spt_backend_info) :: info
    integer(c_int) :: st, b
    call expect_status(spt_context_set_backend(ctx, SPT_BACKEND_CPU), SPT_OK, 'spt_context_set_backend(CPU)')
    call expect_status(spt_context_get_backend(ctx, b), SPT_OK, 'spt_context_get_backend')
    call check(b == SPT_BACKEND_CPU, 'backend setting is CPU')
    call expect_status(sptf_context_backend_info(ctx, info), SPT_OK, 'spt_context_backend_info')
    call check(info%struct_size == c_sizeof(info), 'backend info struct_size')
    call check(info%requested == SPT_BACKEND_CPU .and. info%backend == SPT_BACKEND_CPU, 'backend info: CPU requested and used')
    call check(len(sptf_c_chars(info%reason)) > 0, 'backend info gives a reason CUDA is not used: ' // &
               sptf_c_chars(info%reason))
    call check(info%cuda_available == 0 .or. len(sptf_c_chars(info%device_name)) > 0, &
               'device name present when CUDA is available')
    ! Device 0 exists only with a usable CUDA plugin; either answer is a status.
    st = spt_context_set_device(ctx, 0_c_int)
    call check(st == SPT_OK .or. st == SPT_ERR_DEVICE, 'spt_context_set_device(0): ' // sptf_status_string(st))
    call expect_status(spt_context_set_device(ctx, -1_c_int), SPT_ERR_INVALID_ARGUMENT, 'set_device(-1) rejected')
    call expect_status(spt_context_backend_info(ctx, info), SPT_OK, 'backend info (second call)')
    info%struct_size = 0
    call expect_status(spt_context_backend_info(ctx, info), SPT_ERR_INVALID_ARGUMENT, 'backend info struct_size 0')
  end subroutine

  subroutine check_ttv()
    real(dp), target :: v1(14), v2(55), v3(14), out1(14)
    real(dp) :: want2(14, 14), want1(14), total, want_total
    real(dp), allocatable :: got(:, :, :)
    type(c_ptr) :: y, vecs(3)
    integer(c_int32_t) :: ydims(2), o
    integer(c_int64_t) :: n, k
    integer(c_int32_t), pointer :: j1(:), j3(:)
    real(dp), pointer :: w(:)
    integer :: i, j
    do i = 1, 14
      v1(i) = cos(real(i, dp))
      v3(i) = 1 + 0.1_dp * i
    end do
    do i = 1, 55
      v2(i) = sin(real(3 * i, dp))
    end do
    ! Y = X x_2 v2: order 2 (modes 1 and 3 kept).
    call expect_status(spt_ttv(ctx, x, 1_c_int32_t, c_loc(v2), 55_c_int64_t, y), SPT_OK, 'spt_ttv')
    call coo_shape(y, dtype, o, n, 'ttv info')
    call expect_status(spt_coo_dims(y, ydims), SPT_OK, 'ttv dims')
    call check(o == 2 .and. all(ydims == [14, 14]), 'ttv result is 14 x 14')
    do j = 1, 14
      do i = 1, 14
        want2(i, j) = sum(dense(i, :, j) * v2)
      end do
    end do
    allocate(got(14, 14, 1))
    got = 0
    call expect_status(spt_coo_indices(y, 0_c_int32_t, p), SPT_OK, 'ttv indices')
    call c_f_pointer(p, j1, [n])
    call expect_status(spt_coo_indices(y, 1_c_int32_t, p), SPT_OK, 'ttv indices')
    call c_f_pointer(p, j3, [n])
    call expect_status(spt_coo_values(y, p), SPT_OK, 'ttv values')
    call c_f_pointer(p, w, [n])
    do k = 1, n
      got(j1(k) + 1, j3(k) + 1, 1) = got(j1(k) + 1, j3(k) + 1, 1) + w(k)
    end do
    call check(close_to(reshape(got, [196]), reshape(want2, [196]), 1e-12_dp), 'TTV equals the loop')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    call expect_status(spt_ttv(ctx, x, 1_c_int32_t, c_loc(v2), 54_c_int64_t, y), SPT_ERR_INVALID_ARGUMENT, &
                       'ttv with a short vector rejected')
    ! TTV chain keeping mode 1, and the full contraction.
    vecs = [c_null_ptr, c_loc(v2), c_loc(v3)]
    call expect_status(spt_ttv_chain(ctx, x, 0_c_int32_t, vecs, c_loc(out1)), SPT_OK, 'spt_ttv_chain')
    do i = 1, 14
      want1(i) = sum(want2(i, :) * v3)
    end do
    call check(close_to(out1, want1, 1e-12_dp), 'TTV chain equals the loop')
    vecs(1) = c_loc(v1)
    call expect_status(spt_ttv_all(ctx, x, vecs, total), SPT_OK, 'spt_ttv_all')
    want_total = sum(want1 * v1)
    call check(abs(total - want_total) <= 1e-12_dp * max(1.0_dp, abs(want_total)), 'TTV all equals the loop')
  end subroutine

  subroutine check_ttm()
    real(dp), allocatable, target :: u2(:, :), u3(:, :)
    real(dp), allocatable :: want(:, :, :), want2(:, :, :), got(:, :, :)
    type(c_ptr) :: mu2, mu3, y, z, c, us(2)
    integer(c_int32_t) :: o, dense_mode, ydims(3), count
    integer(c_int32_t), target :: modes(3)
    integer(c_int64_t) :: nfib
    type(spt_scoo_summary) :: ys
    real(dp), pointer :: blocks(:, :)
    integer(c_int32_t), pointer :: f1(:), f3(:)
    integer :: i, k, r, s
    allocate(u2(55, 4), u3(14, 2))
    call fill(u2, 1)
    call fill(u3, 2)
    call expect_status(sptf_matrix_wrap(ctx, u2, mu2), SPT_OK, 'wrap u2')
    call expect_status(sptf_matrix_wrap(ctx, u3, mu3), SPT_OK, 'wrap u3')
    ! Y = X x_2 U2^T: 14 x 4 x 14, dense in mode 2.
    allocate(want(14, 4, 14), want2(14, 4, 2), got(14, 4, 14))
    do k = 1, 14
      do r = 1, 4
        do i = 1, 14
          want(i, r, k) = sum(dense(i, :, k) * u2(:, r))
        end do
      end do
    end do
    call expect_status(spt_ttm(ctx, x, 1_c_int32_t, mu2, y), SPT_OK, 'spt_ttm')
    ys%struct_size = c_sizeof(ys)
    call expect_status(spt_scoo_info(ctx, y, ys), SPT_OK, 'spt_scoo_info')
    o = ys%order
    dense_mode = ys%dense_mode
    nfib = ys%nfibers
    call check(ys%dtype == SPT_FLOAT64 .and. ys%dense_mode_count == 1 .and. ys%block_length == 4, &
               'TTM summary: float64, one dense mode, blocks of 4')
    call expect_status(spt_scoo_dims(y, ydims), SPT_OK, 'spt_scoo_dims')
    call check(o == 3 .and. dense_mode == 1 .and. all(ydims == [14, 4, 14]), 'TTM result: 14 x 4 x 14, dense mode 1')
    ! Fibers (one per (i, k)) read through the accessors: blocks(R, nfibers).
    call expect_status(spt_scoo_indices(y, 0_c_int32_t, p), SPT_OK, 'spt_scoo_indices 0')
    call c_f_pointer(p, f1, [nfib])
    call expect_status(spt_scoo_indices(y, 2_c_int32_t, p), SPT_OK, 'spt_scoo_indices 2')
    call c_f_pointer(p, f3, [nfib])
    call expect_status(spt_scoo_values(y, p), SPT_OK, 'spt_scoo_values')
    call c_f_pointer(p, blocks, [4_c_int64_t, nfib])
    got = 0
    do s = 1, int(nfib)
      got(f1(s) + 1, :, f3(s) + 1) = blocks(:, s)
    end do
    call check(close_to(reshape(got, [size(got)]), reshape(want, [size(want)]), 1e-12_dp), &
               'TTM fibers equal the loop')
    call expect_status(spt_scoo_indices(y, 1_c_int32_t, p), SPT_ERR_INVALID_ARGUMENT, 'indices of the dense mode rejected')
    call expect_status(spt_scoo_dense_modes(y, count, c_loc(modes)), SPT_OK, 'spt_scoo_dense_modes')
    call check(count == 1 .and. modes(1) == 1, 'one dense mode: 1')
    call expect_status(spt_scoo_to_coo(ctx, y, c), SPT_OK, 'spt_scoo_to_coo')
    call densify(c, got)
    call check(close_to(reshape(got, [size(got)]), reshape(want, [size(want)]), 1e-12_dp), 'TTM as COO equals the loop')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    ! Z = Y x_3 U3^T (semi-sparse TTM) and the same as a TTM chain.
    do k = 1, 2
      do r = 1, 4
        do i = 1, 14
          want2(i, r, k) = sum(want(i, r, :) * u3(:, k))
        end do
      end do
    end do
    deallocate(got)
    allocate(got(14, 4, 2))
    call expect_status(spt_scoo_ttm(ctx, y, 2_c_int32_t, mu3, z), SPT_OK, 'spt_scoo_ttm')
    call expect_status(spt_scoo_dense_modes(z, count, c_loc(modes)), SPT_OK, 'dense modes of Z')
    call check(count == 2 .and. all(modes(1:2) == [1, 2]), 'Z dense in modes 1 and 2')
    call expect_status(spt_scoo_to_coo(ctx, z, c), SPT_OK, 'spt_scoo_to_coo (Z)')
    call densify(c, got)
    call check(close_to(reshape(got, [size(got)]), reshape(want2, [size(want2)]), 1e-12_dp), &
               'semi-sparse TTM equals the loop')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    call expect_status(spt_scoo_free(z), SPT_OK, 'spt_scoo_free')
    us = [mu3, mu2]
    call expect_status(spt_ttm_chain(ctx, x, 2_c_int32_t, [2_c_int32_t, 1_c_int32_t], us, z), SPT_OK, 'spt_ttm_chain')
    call expect_status(spt_scoo_to_coo(ctx, z, c), SPT_OK, 'spt_scoo_to_coo (chain)')
    call densify(c, got)
    call check(close_to(reshape(got, [size(got)]), reshape(want2, [size(want2)]), 1e-12_dp), 'TTM chain equals the loop')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    call expect_status(spt_scoo_free(z), SPT_OK, 'spt_scoo_free')
    call expect_status(spt_ttm(ctx, x, 0_c_int32_t, mu2, z), SPT_ERR_INVALID_ARGUMENT, 'TTM shape mismatch rejected')
    call expect_status(spt_scoo_free(y), SPT_OK, 'spt_scoo_free')
    call expect_status(spt_matrix_free(mu2), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mu3), SPT_OK, 'free')
  end subroutine

  ! HB-CSF rooted at mode 2 (0-based 1): statistics add up, the MTTKRP equals
  ! the COO one, the round trip keeps the tensor; plain B-CSF the same.
  subroutine check_hbcsf()
    real(dp), allocatable, target :: a1(:, :), a2(:, :), a3(:, :), out(:, :), ref(:, :), out0(:, :), ref0(:, :)
    type(c_ptr) :: h, m1, m2, m3, mout, mref, mout0, mref0, c, factors(3), factors0(3)
    type(spt_hbcsf_options), target :: opts
    type(spt_hbcsf_summary) :: stats
    integer(c_int32_t) :: hdims(3)
    real(dp) :: norm_c
    integer :: variant
    allocate(a1(14, rank), a2(55, rank), a3(14, rank), out(55, rank), ref(55, rank), out0(14, rank), ref0(14, rank))
    call fill(a1, 6)
    call fill(a2, 8)
    call fill(a3, 7)
    call expect_status(sptf_matrix_wrap(ctx, a2, m2), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, out0, mout0), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, ref0, mref0), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, a1, m1), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, a3, m3), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, out, mout), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, ref, mref), SPT_OK, 'wrap')
    factors = [m1, c_null_ptr, m3]
    call expect_status(spt_mttkrp(ctx, x, factors, 1_c_int32_t, mref), SPT_OK, 'spt_mttkrp (reference)')
    factors0 = [c_null_ptr, m2, m3]
    call expect_status(spt_mttkrp(ctx, x, factors0, 0_c_int32_t, mref0), SPT_OK, 'spt_mttkrp mode 0 (reference)')
    do variant = 1, 2
      call expect_status(spt_hbcsf_options_init(opts), SPT_OK, 'spt_hbcsf_options_init')
      call check(opts%fiber_threshold == 128, 'HB-CSF default fiber threshold')
      opts%fiber_threshold = 4     ! forces fiber and slice splits on nations
      opts%slice_split_nnz = 16
      if (variant == 2) opts%flags = SPT_HBCSF_PLAIN_BCSF
      opts%root_mode = 1
      call expect_status(spt_hbcsf_from_coo(ctx, x, c_loc(opts), h), SPT_OK, 'spt_hbcsf_from_coo')
      stats%struct_size = c_sizeof(stats)
      call expect_status(spt_hbcsf_info(ctx, h, stats), SPT_OK, 'spt_hbcsf_info')
      call check(stats%order == 3 .and. stats%root_mode == 1 .and. stats%nnz == nnz .and. &
                 stats%coo_nnz + stats%csl_nnz + stats%bcsf_nnz == nnz .and. stats%split_fibers > 0 .and. &
                 stats%units >= stats%bcsf_slices, 'HB-CSF statistics add up')
      if (variant == 2) call check(stats%bcsf_nnz == nnz, 'plain B-CSF: every nonzero in the B-CSF group')
      call expect_status(spt_hbcsf_dims(h, hdims), SPT_OK, 'spt_hbcsf_dims')
      call check(all(hdims == dims), 'HB-CSF dims')
      out = -1
      call expect_status(spt_mttkrp_hbcsf(ctx, h, factors, 1_c_int32_t, mout), SPT_OK, 'spt_mttkrp_hbcsf')
      call check(close_to(reshape(out, [size(out)]), reshape(ref, [size(ref)]), 1e-12_dp), &
                 'HB-CSF MTTKRP equals the COO MTTKRP')
      ! Mode 0 from the same tree (rooted at mode 1): the root's factor is read.
      out0 = -1
      call expect_status(spt_mttkrp_hbcsf(ctx, h, factors0, 0_c_int32_t, mout0), SPT_OK, 'spt_mttkrp_hbcsf (mode 0)')
      call check(close_to(reshape(out0, [size(out0)]), reshape(ref0, [size(ref0)]), 1e-12_dp), &
                 'HB-CSF MTTKRP in a non-root mode equals the COO MTTKRP')
      call expect_status(spt_hbcsf_to_coo(ctx, h, c), SPT_OK, 'spt_hbcsf_to_coo')
      call expect_status(spt_coo_norm(ctx, c, norm_c), SPT_OK, 'norm')
      call check(abs(norm_c - norm_x) <= 1e-12_dp * norm_x, 'HB-CSF decodes to the same tensor (norm)')
      call expect_status(spt_coo_free(c), SPT_OK, 'free')
      call expect_status(spt_hbcsf_free(h), SPT_OK, 'spt_hbcsf_free')
    end do
    opts%root_mode = 3
    call expect_status(spt_hbcsf_from_coo(ctx, x, c_loc(opts), h), SPT_ERR_INVALID_ARGUMENT, &
                       'spt_hbcsf_from_coo rejects root mode 3 of an order-3 tensor')
    call expect_status(spt_matrix_free(m1), SPT_OK, 'free')
    call expect_status(spt_matrix_free(m3), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mout), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mref), SPT_OK, 'free')
    call expect_status(spt_matrix_free(m2), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mout0), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mref0), SPT_OK, 'free')
  end subroutine

  ! HLS rooted at mode 2 (0-based 1), all dense (threshold 1), the default
  ! split and all sparse: statistics add up, the MTTKRP equals the COO one,
  ! the TTMc equals the dense loop (lowest other mode fastest, as F-COO),
  ! the all-sparse round trip keeps the tensor.
  subroutine check_hls()
    real(dp), allocatable, target :: a1(:, :), a3(:, :), out(:, :), ref(:, :), tc(:, :), want_tc(:, :)
    type(c_ptr) :: h, m1, m3, mout, mref, mtc, c, factors(3)
    type(spt_hls_options), target :: opts
    type(spt_hls_summary) :: stats
    integer(c_int32_t) :: hdims(3)
    real(dp) :: norm_c
    integer :: variant, i, j, k, a, b
    allocate(a1(14, rank), a3(14, rank), out(55, rank), ref(55, rank))
    allocate(tc(55, rank * rank), want_tc(55, rank * rank))
    call fill(a1, 8)
    call fill(a3, 9)
    call expect_status(sptf_matrix_wrap(ctx, a1, m1), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, a3, m3), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, out, mout), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, ref, mref), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, tc, mtc), SPT_OK, 'wrap')
    factors = [m1, c_null_ptr, m3]
    call expect_status(spt_mttkrp(ctx, x, factors, 1_c_int32_t, mref), SPT_OK, 'spt_mttkrp (reference)')
    do b = 1, rank
      do a = 1, rank
        do j = 1, 55
          want_tc(j, a + rank * (b - 1)) = 0
          do k = 1, 14
            do i = 1, 14
              want_tc(j, a + rank * (b - 1)) = want_tc(j, a + rank * (b - 1)) + dense(i, j, k) * a1(i, a) * a3(k, b)
            end do
          end do
        end do
      end do
    end do
    do variant = 1, 3
      call expect_status(spt_hls_options_init(opts), SPT_OK, 'spt_hls_options_init')
      call check(opts%dense_threshold == 0 .and. opts%slab_depth == 0, 'HLS defaults')
      opts%root_mode = 1
      ! exact arithmetic on the GPU too (tensor-core precisions round)
      opts%precision = SPT_HLS_PRECISION_EXACT
      if (variant == 1) opts%dense_threshold = 1
      if (variant == 3) opts%dense_threshold = huge(opts%dense_threshold)
      call expect_status(spt_hls_from_coo(ctx, x, c_loc(opts), h), SPT_OK, 'spt_hls_from_coo')
      stats%struct_size = c_sizeof(stats)
      call expect_status(spt_hls_info(ctx, h, stats), SPT_OK, 'spt_hls_info')
      call check(stats%order == 3 .and. stats%root_mode == 1 .and. stats%input_nnz == nnz .and. &
                 stats%dense_nnz + stats%sparse_nnz == stats%nnz .and. &
                 stats%dense_tiles + stats%sparse_tiles == stats%tiles, 'HLS statistics add up')
      if (variant == 1) call check(stats%sparse_nnz == 0, 'HLS threshold 1: every tile dense')
      if (variant == 2) call check(stats%dense_threshold == 78 .or. stats%threshold_calibrated == 1, &
                                   'HLS default threshold (or measured on the GPU)')
      call check(stats%precision == SPT_HLS_PRECISION_EXACT, 'HLS precision kept')
      if (variant == 3) call check(stats%dense_nnz == 0 .and. stats%nnz == nnz, 'HLS: every tile sparse')
      call expect_status(spt_hls_dims(h, hdims), SPT_OK, 'spt_hls_dims')
      call check(all(hdims == dims), 'HLS dims')
      out = -1
      call expect_status(spt_mttkrp_hls(ctx, h, factors, 1_c_int32_t, mout), SPT_OK, 'spt_mttkrp_hls')
      call check(close_to(reshape(out, [size(out)]), reshape(ref, [size(ref)]), 1e-12_dp), &
                 'HLS MTTKRP equals the COO MTTKRP')
      tc = -1
      call expect_status(spt_ttmc_hls(ctx, h, factors, mtc), SPT_OK, 'spt_ttmc_hls')
      call check(close_to(reshape(tc, [size(tc)]), reshape(want_tc, [size(want_tc)]), 1e-12_dp), &
                 'HLS TTMc equals the loop')
      if (variant == 3) then
        call expect_status(spt_hls_to_coo(ctx, h, c), SPT_OK, 'spt_hls_to_coo')
        call expect_status(spt_coo_norm(ctx, c, norm_c), SPT_OK, 'norm')
        call check(abs(norm_c - norm_x) <= 1e-12_dp * norm_x, 'HLS decodes to the same tensor (norm)')
        call expect_status(spt_coo_free(c), SPT_OK, 'free')
      end if
      call expect_status(spt_hls_free(h), SPT_OK, 'spt_hls_free')
    end do
    opts%root_mode = 3
    call expect_status(spt_hls_from_coo(ctx, x, c_loc(opts), h), SPT_ERR_INVALID_ARGUMENT, &
                       'spt_hls_from_coo rejects root mode 3 of an order-3 tensor')
    call expect_status(spt_matrix_free(m1), SPT_OK, 'free')
    call expect_status(spt_matrix_free(m3), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mout), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mref), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mtc), SPT_OK, 'free')
  end subroutine

  subroutine check_fcoo()
    real(dp), allocatable, target :: a1(:, :), a2(:, :), a3(:, :), out(:, :), ref(:, :), tc(:, :), want_tc(:, :)
    real(dp), allocatable :: got(:, :, :), want(:, :, :)
    type(c_ptr) :: f, ft, m1, m2, m3, mout, mref, mtc, y, c, factors(3)
    type(spt_fcoo_options), target :: fopts
    type(spt_fcoo_summary) :: fs
    integer(c_int32_t) :: fdims(3)
    integer(c_int32_t) :: tl
    real(dp) :: norm_c
    integer :: i, j, k, a, b
    allocate(a1(14, rank), a2(55, rank), a3(14, rank), out(55, rank), ref(55, rank))
    call fill(a1, 3)
    call fill(a2, 4)
    call fill(a3, 5)
    call expect_status(sptf_matrix_wrap(ctx, a1, m1), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, a2, m2), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, a3, m3), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, out, mout), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, ref, mref), SPT_OK, 'wrap')
    ! F-COO for MTTKRP in mode 2 (index mode 1, 0-based).
    call expect_status(spt_fcoo_options_init(fopts), SPT_OK, 'spt_fcoo_options_init')
    fopts%operation = SPT_FCOO_MTTKRP
    fopts%mode = 1
    fopts%threadlen = 16
    call expect_status(spt_fcoo_from_coo(ctx, x, c_loc(fopts), f), SPT_OK, &
                       'spt_fcoo_from_coo (MTTKRP, threadlen 16)')
    fs%struct_size = c_sizeof(fs)
    call expect_status(spt_fcoo_info(ctx, f, fs), SPT_OK, 'spt_fcoo_info')
    call check(fs%dtype == SPT_FLOAT64 .and. fs%order == 3 .and. fs%nnz == nnz .and. &
               fs%operation == SPT_FCOO_MTTKRP .and. fs%mode == 1 .and. fs%threadlen == 16 .and. &
               fs%segments >= 1 .and. fs%segments <= 55 .and. fs%bytes > 0, 'F-COO info')
    call expect_status(spt_fcoo_dims(f, fdims), SPT_OK, 'spt_fcoo_dims')
    call check(all(fdims == dims), 'F-COO dims')
    factors = [m1, c_null_ptr, m3]
    out = -1
    call expect_status(spt_mttkrp_fcoo(ctx, f, factors, 1_c_int32_t, mout), SPT_OK, 'spt_mttkrp_fcoo')
    call expect_status(spt_mttkrp(ctx, x, factors, 1_c_int32_t, mref), SPT_OK, 'spt_mttkrp (reference)')
    call check(close_to(reshape(out, [size(out)]), reshape(ref, [size(ref)]), 1e-12_dp), &
               'F-COO MTTKRP equals the COO MTTKRP')
    ! TTMc in mode 2: out(j, a + 3 (b-1)) = sum X(i,j,k) A1(i,a) A3(k,b) (lowest other mode fastest).
    allocate(tc(55, rank * rank), want_tc(55, rank * rank))
    do b = 1, rank
      do a = 1, rank
        do j = 1, 55
          want_tc(j, a + rank * (b - 1)) = 0
          do k = 1, 14
            do i = 1, 14
              want_tc(j, a + rank * (b - 1)) = want_tc(j, a + rank * (b - 1)) + dense(i, j, k) * a1(i, a) * a3(k, b)
            end do
          end do
        end do
      end do
    end do
    call expect_status(sptf_matrix_wrap(ctx, tc, mtc), SPT_OK, 'wrap')
    call expect_status(spt_ttmc_fcoo(ctx, f, factors, mtc), SPT_OK, 'spt_ttmc_fcoo')
    call check(close_to(reshape(tc, [size(tc)]), reshape(want_tc, [size(want_tc)]), 1e-12_dp), &
               'F-COO TTMc equals the loop')
    call expect_status(spt_fcoo_to_coo(ctx, f, c), SPT_OK, 'spt_fcoo_to_coo')
    call expect_status(spt_coo_norm(ctx, c, norm_c), SPT_OK, 'norm')
    call check(abs(norm_c - norm_x) <= 1e-12_dp * norm_x, 'F-COO decodes to the same tensor (norm)')
    allocate(got(14, 55, 14), want(14, 4, 14))
    call densify(c, got)
    call check(maxval(abs(got - dense)) <= 0, 'F-COO decodes to the same tensor (values)')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    call expect_status(spt_ttm_fcoo(ctx, f, m2, y), SPT_ERR_INVALID_ARGUMENT, 'TTM on an MTTKRP F-COO rejected')
    ! F-COO for TTM in mode 2: equals spt_ttm.
    fopts%operation = SPT_FCOO_TTM
    fopts%threadlen = 0
    call expect_status(spt_fcoo_from_coo(ctx, x, c_loc(fopts), ft), SPT_OK, &
                       'spt_fcoo_from_coo (TTM, suggested threadlen)')
    call expect_status(spt_ttm_fcoo(ctx, ft, m2, y), SPT_OK, 'spt_ttm_fcoo')
    call expect_status(spt_scoo_to_coo(ctx, y, c), SPT_OK, 'scoo to coo')
    deallocate(got)
    allocate(got(14, rank, 14))
    call densify(c, got)
    do k = 1, 14
      do a = 1, rank
        do i = 1, 14
          want(i, a, k) = sum(dense(i, :, k) * a2(:, a))
        end do
      end do
    end do
    call check(close_to(reshape(got, [size(got)]), reshape(want(:, 1:rank, :), [size(got)]), 1e-12_dp), &
               'F-COO TTM equals the loop')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    call expect_status(spt_scoo_free(y), SPT_OK, 'free')
    fopts%operation = SPT_FCOO_MTTKRP
    fopts%mode = 3
    call expect_status(spt_fcoo_from_coo(ctx, x, c_loc(fopts), y), &
                       SPT_ERR_INVALID_ARGUMENT, 'F-COO mode out of range rejected')
    call expect_status(spt_fcoo_suggest_threadlen(nnz, 16_c_int32_t, SPT_FLOAT32, 0_c_int, tl), SPT_OK, &
                       'spt_fcoo_suggest_threadlen')
    call check(tl == 8 .or. tl == 16 .or. tl == 32, 'spt_fcoo_suggest_threadlen gives 8, 16 or 32')
    call expect_status(spt_fcoo_free(ft), SPT_OK, 'spt_fcoo_free')
    call expect_status(spt_fcoo_free(f), SPT_OK, 'spt_fcoo_free')
    call expect_status(spt_fcoo_free(c_null_ptr), SPT_OK, 'spt_fcoo_free(NULL)')
    call expect_status(spt_matrix_free(m1), SPT_OK, 'free')
    call expect_status(spt_matrix_free(m2), SPT_OK, 'free')
    call expect_status(spt_matrix_free(m3), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mout), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mref), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mtc), SPT_OK, 'free')
  end subroutine

  subroutine check_dense()
    type(c_ptr) :: d, d2, c, t
    integer(c_int) :: dt
    integer(c_int32_t) :: o, ddims(3), cdims(3)
    integer(c_int64_t) :: elements, n
    type(spt_dense_summary) :: ds
    real(dp), pointer :: a(:, :, :), core(:, :, :), core2(:, :, :)
    real(dp), allocatable, target :: small(:, :, :)
    real(dp) :: nrm
    type(spt_tucker_options) :: topts
    integer(c_int32_t), target :: tranks(3) = [2, 3, 2]
    call expect_status(spt_dense_from_coo(ctx, x, 0_c_int64_t, d), SPT_OK, 'spt_dense_from_coo')
    ds%struct_size = c_sizeof(ds)
    call expect_status(spt_dense_info(ctx, d, ds), SPT_OK, 'spt_dense_info')
    dt = ds%dtype
    o = ds%order
    elements = ds%count
    call expect_status(spt_dense_dims(d, ddims), SPT_OK, 'spt_dense_dims')
    call check(dt == SPT_FLOAT64 .and. o == 3 .and. elements == 14 * 55 * 14 .and. all(ddims == dims), 'dense info')
    call expect_status(spt_dense_data_const(d, p), SPT_OK, 'spt_dense_data_const')
    call c_f_pointer(p, a, ddims)
    call check(maxval(abs(a - dense)) <= 0, 'densified tensor maps onto a Fortran array (first index fastest)')
    call expect_status(spt_dense_norm(ctx, d, nrm), SPT_OK, 'spt_dense_norm')
    call check(abs(nrm - norm_x) <= 1e-12_dp * norm_x, 'dense norm equals the COO norm')
    call expect_status(spt_dense_from_coo(ctx, x, 1000_c_int64_t, d2), SPT_ERR_OUT_OF_MEMORY, 'dense max_bytes honoured')
    call expect_status(spt_dense_to_coo(ctx, d, c), SPT_OK, 'spt_dense_to_coo')
    call coo_shape(c, dt, o, n, 'info')
    call check(n == count(abs(dense) > 0), 'to_coo keeps the nonzeros')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    ! A Fortran array copied in: element (i,j,k) lands where C expects it.
    allocate(small(2, 3, 4))
    small = 0
    small(2, 1, 3) = 5
    small(1, 3, 4) = -1
    call expect_status(spt_dense_create_copy(ctx, SPT_FLOAT64, 3_c_int32_t, [2_c_int32_t, 3_c_int32_t, 4_c_int32_t], &
                                             c_loc(small), d2), SPT_OK, 'spt_dense_create_copy')
    call expect_status(spt_dense_to_coo(ctx, d2, c), SPT_OK, 'dense to coo')
    call coo_shape(c, dt, o, n, 'info')
    call check(n == 2, 'two nonzeros')
    call expect_status(spt_coo_indices(c, 0_c_int32_t, p), SPT_OK, 'indices')
    call c_f_pointer(p, i1, [n])
    call expect_status(spt_coo_indices(c, 2_c_int32_t, p), SPT_OK, 'indices')
    call c_f_pointer(p, i3, [n])
    call check(i1(1) == 1 .and. i3(1) == 2 .and. i1(2) == 0 .and. i3(2) == 3, &
               'dense to COO: Fortran (2,1,3) and (1,3,4) in linear order')
    call expect_status(spt_coo_free(c), SPT_OK, 'free')
    call expect_status(spt_dense_free(d2), SPT_OK, 'free')
    call expect_status(spt_dense_create(ctx, SPT_FLOAT32, 2_c_int32_t, [3_c_int32_t, 0_c_int32_t], d2), &
                       SPT_ERR_INVALID_ARGUMENT, 'dense dim 0 rejected')
    call expect_status(spt_dense_create(ctx, SPT_FLOAT64, 1_c_int32_t, [7_c_int32_t], d2), SPT_OK, 'spt_dense_create')
    call expect_status(spt_dense_data(d2, p), SPT_OK, 'spt_dense_data')
    call expect_status(spt_dense_free(d2), SPT_OK, 'free')
    call expect_status(spt_dense_free(d), SPT_OK, 'free')
    ! Tucker core as a dense tensor equals the borrowed core.
    call expect_status(spt_tucker_options_init(topts), SPT_OK, 'tucker options')
    topts%ranks = c_loc(tranks)
    topts%ranks_count = 3
    topts%max_iters = 2
    call expect_status(spt_tucker_hooi(ctx, x, topts, t), SPT_WARN_NOT_CONVERGED, 'spt_tucker_hooi')
    call expect_status(spt_ttensor_core_dims(t, cdims, c_null_ptr), SPT_OK, 'core dims')
    call expect_status(spt_ttensor_core(t, p), SPT_OK, 'core')
    call c_f_pointer(p, core, cdims)
    call expect_status(spt_ttensor_core_dense(ctx, t, d), SPT_OK, 'spt_ttensor_core_dense')
    call expect_status(spt_dense_data(d, p), SPT_OK, 'data')
    call c_f_pointer(p, core2, cdims)
    call check(maxval(abs(core - core2)) <= 0, 'dense Tucker core equals the borrowed core')
    block
      integer(c_int) :: hc
      type(c_ptr) :: hf, hs
      call expect_status(spt_ttensor_history(t, hc, hf, hs), SPT_OK, 'spt_ttensor_history')
      call check(hc == 2, 'Tucker history has 2 sweeps')
    end block
    call expect_status(spt_dense_free(d), SPT_OK, 'free')
    call expect_status(spt_ttensor_free(t), SPT_OK, 'free')
  end subroutine

  subroutine check_reorder()
    type(spt_reorder_options), target :: ropts
    type(c_ptr) :: perm, inv, y, z, k, mf, user
    integer(c_int32_t) :: o, i
    integer(c_int32_t), target :: pdims(3)
    type(spt_permutation_summary) :: ps
    integer(c_int32_t), allocatable, target :: labels(:), labels2(:)
    real(dp), allocatable :: relabeled(:, :, :), back(:, :, :)
    real(dp), allocatable, target :: f(:, :), f0(:, :)
    type(c_ptr) :: perms(3)
    integer(c_int32_t), target :: id1(14), id2(55), id3(14)
    logical :: ok
    integer :: m
    call expect_status(spt_reorder_options_init(ropts), SPT_OK, 'spt_reorder_options_init')
    call check(ropts%struct_size == c_sizeof(ropts) .and. ropts%method == SPT_REORDER_LEXI .and. &
               ropts%iterations == 3, 'reorder option defaults')
    call expect_status(spt_reorder_compute(ctx, x, c_loc(ropts), perm), SPT_OK, 'spt_reorder_compute (LEXI)')
    ps%struct_size = c_sizeof(ps)
    call expect_status(spt_permutation_info(ctx, perm, ps), SPT_OK, 'spt_permutation_info')
    o = ps%order
    call expect_status(spt_permutation_dims(perm, pdims), SPT_OK, 'spt_permutation_dims')
    call check(o == 3 .and. all(pdims == dims), 'permutation order and dims')
    ok = .true.
    do m = 0, 2
      allocate(labels(dims(m + 1)))
      call expect_status(spt_permutation_get(perm, int(m, c_int32_t), labels, int(dims(m + 1), c_int64_t), 1_c_int), &
                         SPT_OK, 'spt_permutation_get (1-based)')
      do i = 1, dims(m + 1)
        ok = ok .and. count(labels == i) == 1
      end do
      deallocate(labels)
    end do
    call check(ok, 'every mode''s labels are a permutation of 1..dims')
    call expect_status(spt_coo_relabeled_copy(ctx, x, perm, y), SPT_OK, 'spt_coo_relabeled_copy')
    allocate(relabeled(14, 55, 14), back(14, 55, 14))
    call densify(y, relabeled)
    call check(abs(sqrt(sum(relabeled**2)) - norm_x) <= 1e-12_dp * norm_x, 'relabelled tensor has the same norm')
    call expect_status(spt_permutation_inverse(ctx, perm, inv), SPT_OK, 'spt_permutation_inverse')
    call expect_status(spt_coo_relabel(ctx, y, inv), SPT_OK, 'spt_coo_relabel (inverse)')
    call densify(y, back)
    call check(maxval(abs(back - dense)) <= 0, 'relabel then inverse restores the tensor')
    call expect_status(spt_coo_sort(ctx, y, c_null_ptr), SPT_OK, 'spt_coo_sort')
    call expect_status(spt_coo_sort_morton(ctx, y), SPT_OK, 'spt_coo_sort_morton')
    ! Factor rows: permute then unpermute restores; row i moves to perm(i).
    allocate(f(55, 2), f0(55, 2), labels2(55))
    call fill(f, 6)
    f0 = f
    call expect_status(sptf_matrix_wrap(ctx, f, mf), SPT_OK, 'wrap')
    call expect_status(spt_matrix_permute_rows(ctx, mf, perm, 1_c_int32_t), SPT_OK, 'spt_matrix_permute_rows')
    call expect_status(spt_permutation_get(perm, 1_c_int32_t, labels2, 55_c_int64_t, 1_c_int), SPT_OK, 'get')
    call check(maxval(abs(f(labels2, :) - f0)) <= 0, 'permute_rows moves row i to perm(i)')
    call expect_status(spt_matrix_unpermute_rows(ctx, mf, perm, 1_c_int32_t), SPT_OK, 'spt_matrix_unpermute_rows')
    call check(maxval(abs(f - f0)) <= 0, 'unpermute_rows restores the rows')
    call expect_status(spt_matrix_free(mf), SPT_OK, 'free')
    ! A CP model on the relabelled tensor, unpermuted, fits the original equally.
    block
      type(spt_cpd_options) :: copts
      real(dp) :: fit1, inner1, inner2, nk
      integer(c_int) :: it, conv
      call expect_status(spt_cpd_options_init(copts), SPT_OK, 'cpd options')
      copts%rank = 2
      copts%max_iters = 3
      copts%tol = 0
      copts%seed = 5
      call expect_status(spt_coo_relabel(ctx, y, perm), SPT_OK, 'relabel again')
      call expect_status(spt_cpd_als(ctx, y, copts, k), SPT_WARN_NOT_CONVERGED, 'cpd on the relabelled tensor')
      call expect_status(spt_ktensor_result(k, fit1, it, conv), SPT_OK, 'result')
      call expect_status(spt_inner_ktensor(ctx, y, k, inner1), SPT_OK, 'inner (relabelled)')
      call expect_status(spt_ktensor_unpermute(ctx, k, perm), SPT_OK, 'spt_ktensor_unpermute')
      call expect_status(spt_inner_ktensor(ctx, x, k, inner2), SPT_OK, 'inner (original labels)')
      call expect_status(spt_ktensor_norm(ctx, k, nk), SPT_OK, 'ktensor norm')
      call check(abs(inner1 - inner2) <= 1e-10_dp * abs(inner1), 'unpermuted model: same <X, M> in the original labels')
      call expect_status(spt_ktensor_free(k), SPT_OK, 'free')
    end block
    ! A caller permutation (identity, 1-based) built from Fortran arrays.
    id1 = [(i, i = 1, 14)]
    id2 = [(i, i = 1, 55)]
    id3 = [(i, i = 1, 14)]
    perms = [c_loc(id1), c_loc(id2), c_loc(id3)]
    call expect_status(spt_permutation_create(ctx, 3_c_int32_t, dims, perms, 1_c_int, user), SPT_OK, &
                       'spt_permutation_create (identity, 1-based)')
    call expect_status(spt_coo_relabeled_copy(ctx, x, user, z), SPT_OK, 'relabel with the identity')
    call densify(z, back)
    call check(maxval(abs(back - dense)) <= 0, 'identity relabelling keeps the tensor')
    id2(1) = 2
    call expect_status(spt_permutation_free(user), SPT_OK, 'free')
    call expect_status(spt_permutation_create(ctx, 3_c_int32_t, dims, perms, 1_c_int, user), SPT_ERR_INVALID_ARGUMENT, &
                       'repeated label rejected')
    call expect_status(spt_coo_free(z), SPT_OK, 'free')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    call expect_status(spt_permutation_free(inv), SPT_OK, 'free')
    call expect_status(spt_permutation_free(perm), SPT_OK, 'free')
  end subroutine

  subroutine check_misc()
    type(c_ptr) :: y, csr, csf, hic, kr, ma, mb, k
    type(spt_format_advice) :: adv
    type(spt_csf_summary) :: cs
    type(spt_csf_options), target :: copts
    type(spt_hicoo_summary) :: his
    type(spt_matrix_summary) :: msum
    type(spt_hicoo_statistics) :: hs
    type(spt_hicoo_mode_statistics) :: hms
    character(kind=c_char), target :: reason(2048)
    real(dp) :: nrm, loglik, fit
    integer(c_int) :: dt, it, conv
    integer(c_int32_t) :: o, bs
    integer(c_int64_t) :: rows, cols, n, fib
    type(c_ptr) :: rp, ci, vals
    integer(c_int64_t), pointer :: row_ptr(:)
    real(dp), allocatable, target :: a(:, :), b(:, :), prod(:, :)
    type(spt_cp_apr_options) :: aopts
    integer :: i, j
    ! Elementwise: X + X has twice the norm; 2 * X (scalar MUL) too.
    call expect_status(spt_elementwise(ctx, SPT_OP_ADD, x, x, y), SPT_OK, 'spt_elementwise ADD')
    call expect_status(spt_coo_norm(ctx, y, nrm), SPT_OK, 'norm')
    call check(abs(nrm - 2 * norm_x) <= 1e-12_dp * norm_x, '||X + X|| = 2 ||X||')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    call expect_status(spt_elementwise_scalar(ctx, SPT_OP_MUL, x, 2.0_dp, y), SPT_OK, 'spt_elementwise_scalar MUL')
    call expect_status(spt_coo_norm(ctx, y, nrm), SPT_OK, 'norm')
    call check(abs(nrm - 2 * norm_x) <= 1e-12_dp * norm_x, '||2 X|| = 2 ||X||')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    call expect_status(spt_elementwise_scalar(ctx, SPT_OP_DIV, x, 0.0_dp, y), SPT_ERR_INVALID_ARGUMENT, 'X / 0 rejected')
    call expect_status(spt_coo_convert_dtype(ctx, x, SPT_FLOAT32, y), SPT_OK, 'spt_coo_convert_dtype')
    call coo_shape(y, dt, o, n, 'info')
    call check(dt == SPT_FLOAT32 .and. n == nnz, 'float32 copy')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    ! Append to a copy: one more nonzero.
    call expect_status(spt_coo_copy(ctx, x, y), SPT_OK, 'copy')
    block
      integer(c_int32_t), target :: sub(3) = [1, 1, 1]
      real(dp), target :: val(1) = [1.5_dp]
      call expect_status(spt_coo_append(ctx, y, 1_c_int64_t, c_loc(sub), 1_c_int64_t, 1_c_int, c_loc(val), &
                                        SPT_COO_DEFAULT), SPT_OK, 'spt_coo_append')
    end block
    call coo_shape(y, dt, o, n, 'info')
    call check(n == nnz + 1, 'append adds a nonzero')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    ! CSR unfolding in mode 1: row sums equal the loop.
    call expect_status(spt_unfold_csr(ctx, x, 0_c_int32_t, csr), SPT_OK, 'spt_unfold_csr')
    call expect_status(spt_csr_arrays(csr, dt, rows, cols, n, rp, ci, vals), SPT_OK, 'spt_csr_arrays')
    call check(rows == 14 .and. cols == 55 * 14 .and. n <= nnz, 'unfolding 14 x 770')
    call c_f_pointer(rp, row_ptr, [rows + 1])
    call check(row_ptr(1) == 0 .and. row_ptr(rows + 1) == n, 'row pointers span the nonzeros')
    call expect_status(spt_csr_free(csr), SPT_OK, 'spt_csr_free')
    ! Khatri-Rao of two wrapped arrays.
    allocate(a(3, 2), b(4, 2), prod(12, 2))
    call fill(a, 7)
    call fill(b, 8)
    call expect_status(sptf_matrix_wrap(ctx, a, ma), SPT_OK, 'wrap')
    call expect_status(sptf_matrix_wrap(ctx, b, mb), SPT_OK, 'wrap')
    call expect_status(spt_khatri_rao(ctx, ma, mb, kr), SPT_OK, 'spt_khatri_rao')
    call expect_status(sptf_matrix_copy(kr, prod), SPT_OK, 'copy out')
    block
      logical :: ok
      ok = .true.
      do i = 1, 3
        do j = 1, 4
          ok = ok .and. all(abs(prod((i - 1) * 4 + j, :) - a(i, :) * b(j, :)) <= 1e-15_dp)
        end do
      end do
      call check(ok, 'Khatri-Rao row i*J + j = A(i,:) .* B(j,:)')
    end block
    call expect_status(spt_matrix_free(kr), SPT_OK, 'free')
    call expect_status(spt_kronecker(ctx, ma, mb, kr), SPT_OK, 'spt_kronecker')
    msum%struct_size = c_sizeof(msum)
    call expect_status(spt_matrix_info(ctx, kr, msum), SPT_OK, 'info')
    call check(msum%rows == 12 .and. msum%cols == 4 .and. msum%dtype == SPT_FLOAT64 .and. msum%wrapped == 0, &
               'Kronecker 12 x 4, owned float64')
    msum%struct_size = c_sizeof(msum)
    call expect_status(spt_matrix_info(ctx, ma, msum), SPT_OK, 'info (wrapped)')
    call check(msum%wrapped == 1 .and. msum%layout == SPT_COL_MAJOR .and. msum%ld == 3, &
               'a wrapped Fortran array: column-major, ld = size(a, 1)')
    call expect_status(spt_matrix_free(kr), SPT_OK, 'free')
    call expect_status(spt_matrix_free(ma), SPT_OK, 'free')
    call expect_status(spt_matrix_free(mb), SPT_OK, 'free')
    ! Format advice with a reason buffer.
    adv%struct_size = c_sizeof(adv)
    adv%reason = c_loc(reason)
    adv%reason_capacity = size(reason)
    call expect_status(spt_suggest_format(ctx, x, 8_c_int32_t, adv), SPT_OK, 'spt_suggest_format')
    call check(adv%format >= SPT_TENSOR_FORMAT_COO .and. adv%format <= SPT_TENSOR_FORMAT_HICOO .and. &
               adv%reason_length > 0, 'format advice with a reason')
    ! CSF summary and fibers.
    call expect_status(spt_csf_options_init(copts), SPT_OK, 'spt_csf_options_init')
    copts%policy = SPT_CSF_ALLMODE
    call expect_status(spt_csf_from_coo(ctx, x, c_loc(copts), csf), SPT_OK, 'csf')
    cs%struct_size = c_sizeof(cs)
    call expect_status(spt_csf_info(ctx, csf, cs), SPT_OK, 'spt_csf_info')
    call check(cs%trees == 3 .and. cs%nnz == nnz .and. cs%order == 3 .and. cs%policy == SPT_CSF_ALLMODE .and. &
               cs%mode_order(1, 1) == 0 .and. cs%mode_order(1, 2) == 1, 'CSF summary: 3 trees, tree t rooted at mode t')
    call expect_status(spt_csf_fibers(csf, 0_c_int32_t, 2_c_int32_t, fib), SPT_OK, 'spt_csf_fibers')
    call check(fib == nnz, 'leaf level has nnz nodes')
    call expect_status(spt_csf_free(csf), SPT_OK, 'spt_csf_free')
    ! HiCOO info, stats and per-mode stats.
    call expect_status(spt_hicoo_from_coo(ctx, x, c_null_ptr, hic), SPT_OK, 'hicoo')
    his%struct_size = c_sizeof(his)
    call expect_status(spt_hicoo_info(ctx, hic, his), SPT_OK, 'spt_hicoo_info')
    bs = his%block_size
    call check(his%order == 3 .and. his%nnz == nnz .and. bs >= 1 .and. his%bytes > 0, 'HiCOO info')
    hs%struct_size = c_sizeof(hs)
    call expect_status(spt_hicoo_stats(ctx, hic, hs), SPT_OK, 'spt_hicoo_stats (no reason buffer)')
    call check(hs%nnz == nnz .and. hs%block_size == bs .and. hs%num_blocks >= 1, 'HiCOO statistics')
    hms%struct_size = c_sizeof(hms)
    call expect_status(spt_hicoo_mode_stats(ctx, hic, 1_c_int32_t, hms), SPT_OK, 'spt_hicoo_mode_stats')
    call check(hms%slabs >= 1 .and. hms%max_slab_nnz <= nnz, 'HiCOO mode statistics')
    call expect_status(spt_hicoo_to_coo(ctx, hic, y), SPT_OK, 'spt_hicoo_to_coo')
    call expect_status(spt_coo_norm(ctx, y, nrm), SPT_OK, 'norm')
    call check(abs(nrm - norm_x) <= 1e-12_dp * norm_x, 'HiCOO back to COO keeps the norm')
    call expect_status(spt_coo_free(y), SPT_OK, 'free')
    call expect_status(spt_hicoo_free(hic), SPT_OK, 'free')
    ! CP-APR: the log-likelihood function agrees with the run's record.
    call expect_status(spt_cp_apr_options_init(aopts), SPT_OK, 'apr options')
    aopts%rank = 2
    aopts%max_outer_iters = 2
    aopts%tol = 0
    aopts%seed = 3
    call expect_status(spt_cp_apr(ctx, x, aopts, k), SPT_WARN_NOT_CONVERGED, 'spt_cp_apr')
    call expect_status(spt_ktensor_result(k, fit, it, conv), SPT_OK, 'result')
    call expect_status(spt_cp_apr_loglikelihood(ctx, x, k, loglik), SPT_OK, 'spt_cp_apr_loglikelihood')
    call check(abs(loglik - fit) <= 1e-8_dp * abs(fit), 'log-likelihood equals the CP-APR record')
    call expect_status(spt_ktensor_free(k), SPT_OK, 'free')
  end subroutine

end program kernels_check
