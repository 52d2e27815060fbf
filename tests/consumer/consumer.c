/* A program outside the robotmem tree: learn + recall through the installed package. */
#include <stdio.h>
#include <string.h>

#include "robotmem.h"

#ifndef CONSUMER_VARIANT
#define CONSUMER_VARIANT "unknown"
#endif

static int fail(const char *what, rm_status st) {
    fprintf(stderr, "consumer (%s): %s failed: %s", CONSUMER_VARIANT, what, rm_status_str(st));
    fprintf(stderr, ": %s\n", rm_last_error());
    return 1;
}

int main(void) {
    rm_open_options o;
    rm_db *db = NULL;
    rm_learn_result *l = NULL;
    rm_recall_result *r = NULL;
    rm_status st;
    int ok;

    if (strcmp(rm_version(), RM_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s but library %s\n", RM_VERSION_STRING, rm_version());
        return 1;
    }
    if ((st = rm_open_options_init(&o)) != RM_OK) return fail("rm_open_options_init", st);
    o.path = ":memory:";
    if ((st = rm_open(&o, &db)) != RM_OK) return fail("rm_open", st);
    if ((st = rm_learn(db, "lift the tray with both arms at 0.2 m/s", NULL, &l)) != RM_OK)
        return fail("rm_learn", st);
    if ((st = rm_recall(db, "tray arms", NULL, &r)) != RM_OK) return fail("rm_recall", st);
    ok = r->count == 1 && r->hits[0].memory.id == l->memory_id && r->hits[0].score == 1.0;
    printf("consumer (%s): robotmem %s, recalled #%lld: %s\n", CONSUMER_VARIANT, rm_version(),
           r->count ? (long long)r->hits[0].memory.id : -1LL, r->count ? r->hits[0].memory.content : "-");
    rm_recall_result_free(r);
    rm_learn_result_free(l);
    if ((st = rm_close(db)) != RM_OK) return fail("rm_close", st);
    return ok ? 0 : 1;
}
