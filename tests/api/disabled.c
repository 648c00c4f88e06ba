/* With -DTP_DISABLE the zone macros vanish: a NULL session is never touched
 * and no tp_site statics exist. */
#define TP_DISABLE 1
#include "header_use.h"
int main(void) { return use_public_header(); }
