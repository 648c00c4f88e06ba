#include "header_use.h"
int main() { return use_public_header(); }
