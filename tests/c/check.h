/* Tiny assertion helpers for the robotmem C tests (C99 + POSIX). Include first. */
#ifndef ROBOTMEM_TEST_CHECK_H
#define ROBOTMEM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "robotmem.h"

#include <dirent.h>

/* Temporary directories of this test program, removed also when a CHECK fails. */
static char check_dirs_[8][256];

static inline void check_remove_dirs_(void) {
    size_t i;
    for (i = 0; i < sizeof check_dirs_ / sizeof check_dirs_[0]; i++) {
        DIR *d;
        struct dirent *e;
        char f[600];
        if (!check_dirs_[i][0] || (d = opendir(check_dirs_[i])) == NULL) continue;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if (snprintf(f, sizeof f, "%s/%s", check_dirs_[i], e->d_name) < (int)sizeof f) unlink(f);
        }
        closedir(d);
        rmdir(check_dirs_[i]);
        check_dirs_[i][0] = '\0';
    }
}

/* Prints where and what failed, the status (if any) and rm_last_error(), removes
   the test's temporary directories and exits 1. */
static inline void check_fail(const char *file, int line, const char *expr, int have_status,
                              rm_status got, rm_status want) {
    char err[512];
    snprintf(err, sizeof err, "%s", rm_last_error()); /* copy before the next rm_ call */
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
    if (have_status)
        fprintf(stderr, "  status: %s (expected %s)\n", rm_status_str(got), rm_status_str(want));
    fprintf(stderr, "  rm_last_error(): \"%s\"\n", err);
    check_remove_dirs_();
    exit(1);
}

#define CHECK(expr) \
    do { if (!(expr)) check_fail(__FILE__, __LINE__, #expr, 0, RM_OK, RM_OK); } while (0)

/* Evaluates an rm_ call once and requires a given status. */
#define CHECK_STATUS(call, want)                                                \
    do {                                                                        \
        rm_status check_got_ = (call);                                          \
        if (check_got_ != (rm_status)(want))                                    \
            check_fail(__FILE__, __LINE__, #call, 1, check_got_, (rm_status)(want)); \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, RM_OK)
#define CHECK_STREQ(a, b) CHECK((a) != NULL && (b) != NULL && strcmp((a), (b)) == 0)

/* A fresh database path in a private temporary directory. */
typedef struct { char dir[256]; char path[300]; } test_db_path;

static inline void test_db_path_init(test_db_path *p, const char *name) {
    const char *tmp = getenv("TMPDIR");
    snprintf(p->dir, sizeof p->dir, "%s/robotmem-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(p->dir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(p->path, sizeof p->path, "%s/%s.db", p->dir, name);
    {
        size_t i;
        for (i = 0; i < sizeof check_dirs_ / sizeof check_dirs_[0]; i++) {
            if (!check_dirs_[i][0]) {
                snprintf(check_dirs_[i], sizeof check_dirs_[i], "%s", p->dir);
                break;
            }
        }
    }
}

/* Removes the database, its WAL/SHM files, its -lock file and the directory. */
static inline void test_db_path_remove(const test_db_path *p) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal", "-lock"};
    char f[320];
    size_t i;
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(f, sizeof f, "%s%s", p->path, suffixes[i]);
        unlink(f);
    }
    rmdir(p->dir);
    for (i = 0; i < sizeof check_dirs_ / sizeof check_dirs_[0]; i++) {
        if (strcmp(check_dirs_[i], p->dir) == 0) check_dirs_[i][0] = '\0';
    }
}

static inline rm_db *test_open(const char *path) {
    rm_open_options o;
    rm_db *db = NULL;
    CHECK_OK(rm_open_options_init(&o));
    o.path = path;
    o.durability = RM_DURABILITY_NORMAL; /* tests need no fsync per commit */
    CHECK_OK(rm_open(&o, &db));
    CHECK(db != NULL);
    return db;
}

/* Learns an insight (with an optional context) that must be created; returns its id. */
static inline int64_t test_learn(rm_db *db, const char *insight, const char *context) {
    rm_learn_options o;
    rm_learn_result *r = NULL;
    int64_t id;
    CHECK_OK(rm_learn_options_init(&o));
    o.context = context;
    CHECK_OK(rm_learn(db, insight, &o, &r));
    CHECK(r != NULL && !r->duplicate && r->memory_id > 0);
    id = r->memory_id;
    rm_learn_result_free(r);
    return id;
}

/* Learns an insight into `collection` (NULL: default) and `session` (NULL: none)
 * that must be created; returns its id. */
static inline int64_t test_learn_in(rm_db *db, const char *insight, const char *context, const char *collection,
                                    const char *session) {
    rm_learn_options o;
    rm_learn_result *r = NULL;
    int64_t id;
    CHECK_OK(rm_learn_options_init(&o));
    o.context = context;
    o.collection = collection;
    o.session_id = session;
    CHECK_OK(rm_learn(db, insight, &o, &r));
    CHECK(!r->duplicate);
    id = r->memory_id;
    rm_learn_result_free(r);
    return id;
}

/* Recalls with every constraint given (NULL: none); the caller frees the result. */
static inline rm_recall_result *test_recall_in(rm_db *db, const char *query, const char *collection, int n,
                                               const char *filter, const char *spatial, const char *session) {
    rm_recall_options o;
    rm_recall_result *r = NULL;
    CHECK_OK(rm_recall_options_init(&o));
    o.collection = collection;
    o.n = n;
    o.context_filter = filter;
    o.spatial_sort = spatial;
    o.session_id = session;
    CHECK_OK(rm_recall(db, query, &o, &r));
    CHECK(r != NULL);
    return r;
}

/* Recalls with default options but n; the caller frees the result. */
static inline rm_recall_result *test_recall(rm_db *db, const char *query, int n) {
    rm_recall_options o;
    rm_recall_result *r = NULL;
    CHECK_OK(rm_recall_options_init(&o));
    o.n = n;
    CHECK_OK(rm_recall(db, query, &o, &r));
    CHECK(r != NULL);
    return r;
}

/* Number of active memories visible to a scan recall ("*", up to 100). */
static inline size_t test_count(rm_db *db) {
    rm_recall_result *r = test_recall(db, "*", 100);
    size_t n = r->count;
    CHECK(r->mode == RM_MODE_SCAN);
    rm_recall_result_free(r);
    return n;
}

/* True when a recall result contains memory `id`. */
static inline int test_has_id(const rm_recall_result *r, int64_t id) {
    size_t i;
    for (i = 0; i < r->count; i++)
        if (r->hits[i].memory.id == id) return 1;
    return 0;
}

#endif /* ROBOTMEM_TEST_CHECK_H */
