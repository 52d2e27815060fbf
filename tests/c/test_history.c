/* History through the C ABI: rm_memory_history (every version with its cause,
 * NULL and bad arguments refused, outputs untouched on error, JSON) and
 * rm_open_as_of (a read-only handle as of a past time: recall and get answer
 * as of then; writes RM_READ_ONLY; future or malformed times refused). */
#include "check.h"

#include <time.h>

/* The time now as robotmem writes times, after a pause so that what happened
 * before is strictly earlier (stored times have milliseconds). */
static void mark(char out[96]) {
    struct timespec pause = {0, 15 * 1000 * 1000}, now;
    struct tm tm;
    nanosleep(&pause, NULL);
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000L);
    nanosleep(&pause, NULL);
}

static void test_history(const char *path) {
    rm_db *db = test_open(path), *then = NULL, *view;
    rm_history_result *h = (rm_history_result *)0x1;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    char t1[96], t2[96], *json = NULL;
    int64_t id = test_learn(db, "the left gripper pad is worn; grip force 12 N holds mugs", NULL);
    int64_t other = test_learn(db, "the charging dock is at the north wall", NULL);
    mark(t1);
    CHECK_OK(rm_update(db, id, "the left gripper pad was replaced; grip force 8 N holds mugs", NULL, NULL));
    CHECK_OK(rm_forget(db, id, "the gripper was swapped for a suction cup", NULL));
    mark(t2);

    /* Bad arguments: refused, output untouched. */
    CHECK_STATUS(rm_memory_history(db, id, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_memory_history(NULL, id, &h), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_memory_history(db, 0, &h), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_memory_history(db, 987654321, &h), RM_NOT_FOUND);
    CHECK(h == (rm_history_result *)0x1);

    CHECK_OK(rm_memory_history(db, id, &h));
    CHECK(h->memory_id == id && h->count == 3);
    CHECK_STREQ(h->versions[0].cause, "learn");
    CHECK_STREQ(h->versions[1].cause, "update");
    CHECK_STREQ(h->versions[2].cause, "forget");
    CHECK(strstr(h->versions[0].content, "worn") != NULL && strstr(h->versions[1].content, "replaced") != NULL);
    CHECK(h->versions[0].status == RM_MEMORY_ACTIVE && h->versions[2].status == RM_MEMORY_INVALIDATED);
    CHECK_STREQ(h->versions[2].invalidated_reason, "the gripper was swapped for a suction cup");
    CHECK(h->versions[0].invalidated_reason == NULL && h->versions[0].expires_at == NULL);
    CHECK_STREQ(h->versions[0].valid_to, h->versions[1].valid_from);
    CHECK(strcmp(h->versions[0].valid_to, t1) > 0 && strcmp(h->versions[2].valid_from, t2) < 0);
    CHECK(h->versions[2].valid_to == NULL);
    CHECK_STREQ(h->versions[1].writer, "");
    CHECK_STREQ(h->versions[1].cause_writer, "");
    CHECK(h->versions[0].version < h->versions[1].version);
    CHECK_OK(rm_history_result_json(h, &json));
    CHECK(strstr(json, "\"cause\":\"consolidation\"") == NULL && strstr(json, "\"cause\":\"forget\"") != NULL);
    rm_string_free(json);
    CHECK_STATUS(rm_history_result_json(NULL, &json), RM_INVALID_ARGUMENT);
    rm_history_result_free(h);
    rm_history_result_free(NULL);

    /* As of t1: the first text, active, recalled; the later text unknown. */
    CHECK_STATUS(rm_open_as_of(db, NULL, &then), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_open_as_of(db, "last tuesday", &then), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_open_as_of(db, "2999-01-01T00:00:00Z", &then), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "future") != NULL);
    CHECK_STATUS(rm_open_as_of(db, t1, NULL), RM_INVALID_ARGUMENT);
    CHECK(then == NULL);
    CHECK_OK(rm_open_as_of(db, t1, &then));
    CHECK_OK(rm_get_memory(then, id, &m));
    CHECK(strstr(m->memory.content, "worn") != NULL && m->memory.status == RM_MEMORY_ACTIVE);
    rm_memory_result_free(m);
    r = test_recall(then, "worn gripper pad", 10);
    CHECK(r->count == 1 && r->hits[0].memory.id == id);
    rm_recall_result_free(r);
    r = test_recall(then, "replaced", 10);
    CHECK(r->count == 0);
    rm_recall_result_free(r);
    /* Read-only; no view of a view; its history is the same. */
    CHECK_STATUS(rm_learn(then, "a new fact about the dock", NULL, NULL), RM_READ_ONLY);
    CHECK_STATUS(rm_forget(then, other, "no", NULL), RM_READ_ONLY);
    CHECK_STATUS(rm_open_as_of(then, t1, &view), RM_INVALID_ARGUMENT);
    /* The view outlives its database's handle. */
    CHECK_OK(rm_close(db));
    r = test_recall(then, "charging dock", 10);
    CHECK(r->count == 1 && r->hits[0].memory.id == other);
    rm_recall_result_free(r);
    CHECK_OK(rm_close(then));
    CHECK_STATUS(rm_close(then), RM_CLOSED);

    /* As of t2: forgotten by then. */
    db = test_open(path);
    CHECK_OK(rm_open_as_of(db, t2, &then));
    CHECK_OK(rm_get_memory(then, id, &m));
    CHECK(m->memory.status == RM_MEMORY_INVALIDATED);
    rm_memory_result_free(m);
    r = test_recall(then, "gripper", 10);
    CHECK(r->count == 0);
    rm_recall_result_free(r);
    CHECK_OK(rm_close(then));
    CHECK_OK(rm_close(db));
}

int main(void) {
    test_db_path p;
    test_db_path_init(&p, "history");
    test_history(p.path);
    test_db_path_remove(&p);
    printf("test_history: ok\n");
    return 0;
}
