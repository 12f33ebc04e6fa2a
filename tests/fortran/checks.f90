! Check counting shared by the serial Fortran test programs (cpd_check,
! kernels_check): a failed check or unexpected status is printed and
! counted; finish_checks prints the summary line the ctest regexes match
! and stops with status 1 when anything failed.
module spt_fortran_checks
  use, intrinsic :: iso_c_binding, only: c_int
  use sptensor, only: sptf_status_string, sptf_thread_last_error
  implicit none
  private
  public :: failures, check, expect_status, finish_checks

  integer, save :: failures = 0

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      print '(a,a)', 'ok    ', what
    else
      print '(a,a)', 'FAIL  ', what
      failures = failures + 1
    end if
  end subroutine

  ! The message is the calling thread's last error: every failing call sets it.
  subroutine expect_status(got, want, what)
    integer(c_int), intent(in) :: got, want
    character(len=*), intent(in) :: what
    if (got /= want) then
      print '(a,a,a,a,a,a,a,a)', 'FAIL  ', what, ': got ', sptf_status_string(got), ', expected ', &
            sptf_status_string(want), ': ', sptf_thread_last_error()
      failures = failures + 1
    end if
  end subroutine

  subroutine finish_checks(program_name)
    character(len=*), intent(in) :: program_name
    if (failures > 0) then
      print '(i0,a)', failures, ' check(s) FAILED'
      error stop 1
    end if
    print '(a,a)', program_name, ': all checks passed'
  end subroutine

end module
