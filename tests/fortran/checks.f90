! Check counting shared by the serial Fortran test programs (cpd_check,
! gcp_check, kernels_check): a failed check or unexpected status is printed
! and counted; check_cli_value compares a result with the CLI's;
! finish_checks prints the summary line the ctest regexes match and stops
! with status 1 when anything failed.
module spt_fortran_checks
  use, intrinsic :: iso_c_binding, only: c_double, c_int
  use sptensor, only: sptf_status_string, sptf_thread_last_error
  implicit none
  private
  public :: failures, check, check_cli_value, expect_status, finish_checks

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

  ! This program's `name` (a value of a run) against the CLI's: both printed,
  ! then equal to 1e-9 relative.
  subroutine check_cli_value(name, got, cli, what)
    character(len=*), intent(in) :: name, what
    real(c_double), intent(in) :: got, cli
    print '(a,a,a,es20.12,a,es20.12)', 'fortran ', name, ' ', got, '   cli ', cli
    call check(abs(got - cli) <= 1e-9_c_double * abs(cli), what)
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
