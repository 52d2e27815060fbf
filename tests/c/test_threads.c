/* One rm_db shared by 8 threads doing learn / recall / get for about 2 seconds. */
#include "check.h"

#include <pthread.h>
#include <time.h>

#define THREADS 8
#define SECONDS 2.0
#define MAX_PER_THREAD 2000

typedef struct {
    rm_db *db;
    int index;
    size_t learned;
    int64_t ids[MAX_PER_THREAD];
    size_t recalls, gets;
} worker;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void content_of(char *buf, size_t n, int thread, size_t i) {
    snprintf(buf, n, "thread %d stored grasp %zu with force %zuN", thread, i, i * 7 + (size_t)thread);
}

static void *run(void *arg) {
    worker *w = arg;
    double deadline = now_s() + SECONDS;
    char text[128];
    while (w->learned < MAX_PER_THREAD && now_s() < deadline) {
        rm_learn_result *l = NULL;
        rm_memory_result *m = NULL;
        rm_recall_result *r = NULL;
        rm_recall_options o;
        size_t i = w->learned;

        content_of(text, sizeof text, w->index, i);
        CHECK_OK(rm_learn(w->db, text, NULL, &l));
        CHECK(!l->duplicate && l->memory_id > 0);
        w->ids[w->learned++] = l->memory_id;
        rm_learn_result_free(l);

        CHECK_OK(rm_get_memory(w->db, w->ids[i], &m));
        CHECK_STREQ(m->memory.content, text);
        rm_memory_result_free(m);
        w->gets++;

        CHECK_OK(rm_recall_options_init(&o));
        o.n = 3;
        CHECK_OK(rm_recall(w->db, i % 2 ? "grasp force" : "*", &o, &r));
        CHECK(r->count >= 1 && r->count <= 3 && r->hits[0].memory.content != NULL);
        rm_recall_result_free(r);
        w->recalls++;

        if (i % 50 == 0) { /* rm_last_error() is per thread, whatever the others do */
            CHECK_STATUS(rm_get_memory(w->db, 0, &m), RM_INVALID_ARGUMENT);
            CHECK(strstr(rm_last_error(), "memory_id") != NULL);
            CHECK_OK(rm_flush(w->db));
            CHECK_STREQ(rm_last_error(), "");
        }
    }
    return NULL;
}

/* Calls on a handle that another thread closes: RM_OK until the close, then
 * RM_CLOSED, never a crash or another status. */
static void *until_closed(void *arg) {
    rm_db *db = arg;
    double deadline = now_s() + 10.0;
    char text[64];
    int i;
    for (i = 0; now_s() < deadline; i++) {
        rm_recall_result *r = NULL;
        rm_status st;
        snprintf(text, sizeof text, "closing race note %d at %p", i, (void *)text);
        st = i % 2 ? rm_recall(db, "closing race", NULL, &r) : rm_learn(db, text, NULL, NULL);
        rm_recall_result_free(r);
        if (st == RM_CLOSED) return NULL;
        CHECK_OK(st);
    }
    CHECK(!"the handle was never reported closed");
    return NULL;
}

static void close_under_load(const char *path) {
    pthread_t threads[4];
    struct timespec pause = {0, 200 * 1000 * 1000};
    rm_db *db = test_open(path);
    int t;
    for (t = 0; t < 4; t++) CHECK(pthread_create(&threads[t], NULL, until_closed, db) == 0);
    nanosleep(&pause, NULL);
    CHECK_OK(rm_close(db));
    for (t = 0; t < 4; t++) CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK_STATUS(rm_close(db), RM_CLOSED);
}

static int cmp_id(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void) {
    static worker workers[THREADS];
    pthread_t threads[THREADS];
    test_db_path p;
    static int64_t all_ids[THREADS * MAX_PER_THREAD];
    size_t total = 0, recalls = 0, n_ids = 0, i;
    int t;
    char text[128];

    test_db_path_init(&p, "threads");
    workers[0].db = test_open(p.path);
    for (t = 0; t < THREADS; t++) {
        workers[t].db = workers[0].db;
        workers[t].index = t;
        CHECK(pthread_create(&threads[t], NULL, run, &workers[t]) == 0);
    }
    for (t = 0; t < THREADS; t++) CHECK(pthread_join(threads[t], NULL) == 0);

    /* Every learned id is distinct and reads back with its own content. */
    for (t = 0; t < THREADS; t++) {
        CHECK(workers[t].learned > 0 && workers[t].gets == workers[t].learned);
        total += workers[t].learned;
        recalls += workers[t].recalls;
        for (i = 0; i < workers[t].learned; i++) {
            rm_memory_result *m = NULL;
            CHECK_OK(rm_get_memory(workers[0].db, workers[t].ids[i], &m));
            content_of(text, sizeof text, t, i);
            CHECK_STREQ(m->memory.content, text);
            CHECK(m->memory.status == RM_MEMORY_ACTIVE);
            rm_memory_result_free(m);
            all_ids[n_ids++] = workers[t].ids[i];
        }
    }
    /* Ids are unique across all threads; the newest memory has the largest. */
    qsort(all_ids, n_ids, sizeof all_ids[0], cmp_id);
    for (i = 1; i < n_ids; i++) CHECK(all_ids[i - 1] < all_ids[i]);
    {
        rm_recall_result *r = test_recall(workers[0].db, "*", 1);
        CHECK(r->count == 1 && r->hits[0].memory.id == all_ids[n_ids - 1]);
        rm_recall_result_free(r);
    }
    CHECK_OK(rm_close(workers[0].db));
    workers[0].db = test_open(p.path);
    for (t = 0; t < THREADS; t++) {
        rm_memory_result *m = NULL;
        CHECK_OK(rm_get_memory(workers[0].db, workers[t].ids[workers[t].learned - 1], &m));
        rm_memory_result_free(m);
    }
    CHECK_OK(rm_close(workers[0].db));
    close_under_load(p.path);
    test_db_path_remove(&p);
    printf("test_threads: OK (%zu memories learned, %zu recalls by %d threads)\n", total, recalls, THREADS);
    return 0;
}
