/* exp_gen DIR [STEPS] [ZONES]: writes the synthetic run's exporter files
 * into DIR and DIR/expected.jsonl (every slice and counter fed), for the
 * independent Python decoders in check_exporters.py. */
#include <stdio.h>
#include <stdlib.h>

#include "exp_synth.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: exp_gen DIR [STEPS] [ZONES_PER_STEP]\n");
        return 2;
    }
    exp_run r;
    char path[600];
    exp_run_init(&r, argv[1]);
    snprintf(path, sizeof path, "%s/expected.jsonl", argv[1]);
    r.expected = fopen(path, "w");
    if (!r.expected) {
        perror(path);
        return 1;
    }
    exp_run_add_exporters(&r);
    exp_run_feed(&r, argc > 2 ? atoi(argv[2]) : 5, argc > 3 ? atoi(argv[3]) : 6);
    fclose(r.expected);
    int failed = exp_run_finish(&r);
    printf("slices %llu, failed sinks %d\n", (unsigned long long)r.slices, failed);
    return failed ? 1 : 0;
}
