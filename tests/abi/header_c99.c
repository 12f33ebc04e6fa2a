/* The public header must compile as strict C99 on its own. */
#include <sptensor/sptensor.h>

int main(void) {
  spt_cpd_options opts;
  spt_cpd_options_init(&opts);
  return spt_status_string(SPT_OK)[0] == 'S' ? 0 : 1;
}
