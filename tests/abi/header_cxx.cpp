// The public header must compile as C++ (no C++ types leak through it).
#include <sptensor/sptensor.h>

#include <type_traits>

static_assert(std::is_same<spt_index, uint32_t>::value, "spt_index is 32-bit");
static_assert(std::is_same<spt_nnz, uint64_t>::value, "spt_nnz is 64-bit");

int main() { return spt_version()[0] == '\0'; }
