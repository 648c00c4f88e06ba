#include "header_use.h"
int main(void) { return use_public_header(); }
