# Longest tests first under ctest -j. ctest orders a parallel run by each
# test's cost from Testing/Temporary/CTestCostData.txt, which only exists
# after a first run: a fresh build dir (CI) would start the tests in the
# order they are defined, and a 60-120 s test (Csf.MttkrpMatchesCooReference*,
# HbcsfMttkrp.PathologicalShapes*, mpi_synthetic_np8) started last keeps one
# core busy alone at the end. So a fresh build dir gets a seed file with the
# measured seconds of the tests that take 1.5 s or more (ctest_costs/
# release.txt, or sanitize.txt for an SPT_SANITIZE build, which
# scripts/sanitize.sh runs); ctest then updates it with its own measurements.
# An existing cost file is never overwritten. Test names missing from the
# seed get no cost (start after the listed ones); names in the seed that no
# longer exist are ignored. Refresh the seeds from a local run with
#   awk 'NF==3 && $1 !~ /[(,]/ && $3>=1.5 {printf "%s 1 %.1f\n", $1, $3}' \
#     <build>/Testing/Temporary/CTestCostData.txt | sort -k3 -g -r
# (names with spaces, e.g. parameterized "/(0, 1)" tests, cannot be listed:
# the file is space-separated).
set(_spt_cost_seed ${CMAKE_CURRENT_SOURCE_DIR}/ctest_costs/release.txt)
if(SPT_SANITIZE)
  set(_spt_cost_seed ${CMAKE_CURRENT_SOURCE_DIR}/ctest_costs/sanitize.txt)
endif()
set(_spt_cost_file ${PROJECT_BINARY_DIR}/Testing/Temporary/CTestCostData.txt)
if(NOT EXISTS ${_spt_cost_file})
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/Testing/Temporary)
  file(COPY_FILE ${_spt_cost_seed} ${_spt_cost_file})
endif()
