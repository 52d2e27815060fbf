/* Retention through the C ABI: rm_open_options.max_memories / max_memories_json /
 * evict_protected, evicted_ids in the learn and perception results, RM_OVER_BUDGET
 * (nothing written, outputs untouched), rm_purge, hostile options refused by name. */
#include "check.h"

static rm_db *open_budget(const char *path, uint64_t max, const char *json, bool evict_protected) {
    rm_open_options o;
    rm_db *db = NULL;
    CHECK_OK(rm_open_options_init(&o));
    CHECK(o.max_memories == 0 && o.max_memories_json == NULL && !o.evict_protected);
    o.path = path;
    o.embeddings = false;
    o.durability = RM_DURABILITY_NORMAL;
    o.max_memories = max;
    o.max_memories_json = json;
    o.evict_protected = evict_protected;
    CHECK_OK(rm_open(&o, &db));
    return db;
}

static int64_t learn(rm_db *db, const char *text, size_t want_evicted) {
    rm_learn_result *l = NULL;
    int64_t id;
    CHECK_OK(rm_learn(db, text, NULL, &l));
    CHECK(l->evicted_count == want_evicted);
    CHECK((want_evicted == 0) == (l->evicted_ids == NULL));
    id = l->memory_id;
    rm_learn_result_free(l);
    return id;
}

static void test_budget(const char *path) {
    rm_db *db = open_budget(path, 3, NULL, false);
    rm_learn_result *l = NULL;
    rm_perception_options po;
    rm_perception_result *p = NULL;
    rm_recall_result *r = NULL;
    rm_memory_result *m = NULL;
    char *json = NULL;
    int64_t c1 = learn(db, "the arm must never enter zone 7 while people are inside", 0);
    int64_t a = learn(db, "conveyor 1 stopped for 20 seconds at noon", 0);
    int64_t b = learn(db, "conveyor 2 stopped for 30 seconds at noon", 0);
    CHECK_OK(rm_forget(db, b, "wrong sensor", NULL));
    /* Full: the forgotten one goes first. */
    CHECK_OK(rm_learn(db, "conveyor 3 stopped for 40 seconds at noon", NULL, &l));
    CHECK(l->evicted_count == 1 && l->evicted_ids[0] == b);
    CHECK_OK(rm_learn_result_json(l, &json));
    CHECK(strstr(json, "\"evicted\":[") != NULL);
    rm_string_free(json);
    rm_learn_result_free(l);
    CHECK_STATUS(rm_get_memory(db, b, NULL), RM_INVALID_ARGUMENT); /* NULL out */
    CHECK_OK(rm_perception_options_init(&po));
    CHECK_OK(rm_save_perception(db, "lidar sweep of aisle 3", &po, &p));
    CHECK(p->evicted_count == 1 && p->evicted_ids[0] == a);
    rm_perception_result_free(p);
    CHECK_OK(rm_recall(db, "conveyor stopped", NULL, &r));
    for (size_t i = 0; i < r->count; i++) CHECK(r->hits[i].memory.id != a && r->hits[i].memory.id != b);
    rm_recall_result_free(r);
    CHECK_OK(rm_close(db));

    /* Only protected memories left to evict: RM_OVER_BUDGET, nothing written. */
    db = open_budget(path, 1, NULL, false);
    l = (rm_learn_result *)0x1;
    CHECK_STATUS(rm_learn(db, "conveyor 4 stopped for 50 seconds at noon", NULL, &l), RM_OVER_BUDGET);
    CHECK(l == (rm_learn_result *)0x1); /* untouched */
    CHECK(strstr(rm_last_error(), "protected") != NULL);
    CHECK_STREQ(rm_status_str(RM_OVER_BUDGET), "RM_OVER_BUDGET");
    CHECK_OK(rm_get_memory(db, c1, &m)); /* the constraint is kept */
    CHECK(m->memory.id == c1);
    rm_memory_result_free(m);
    CHECK_OK(rm_close(db));
    db = open_budget(path, 0, "{\"default\": 1}", false);
    CHECK_STATUS(rm_learn(db, "conveyor 4 stopped for 50 seconds at noon", NULL, NULL), RM_OVER_BUDGET);
    CHECK(strstr(rm_last_error(), "collection_max_memories") != NULL);
    CHECK_OK(rm_close(db));
    db = open_budget(path, 1, NULL, true);
    learn(db, "conveyor 4 stopped for 50 seconds at noon", 3);
    CHECK_STATUS(rm_get_memory(db, c1, &m), RM_NOT_FOUND); /* evict_protected let it go */
    CHECK_OK(rm_close(db));
}

static void test_purge(const char *path) {
    rm_db *db = open_budget(path, 0, NULL, false);
    rm_purge_result pr;
    rm_memory_result *m = NULL;
    int64_t keep = learn(db, "dock 1 is free at 9", 0);
    int64_t gone = learn(db, "dock 2 is free at 10", 0);
    CHECK_OK(rm_forget(db, gone, "stale", NULL));
    learn(db, "dock 3 is free at 11", 0);
    memset(&pr, 0xff, sizeof pr);
    CHECK_STATUS(rm_purge(db, -1.0, &pr), RM_INVALID_ARGUMENT);
    CHECK(pr.purged == UINT64_MAX); /* untouched */
    CHECK_STATUS(rm_purge(db, 0.0 / 0.0, &pr), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_purge(NULL, 0.0, &pr), RM_INVALID_ARGUMENT);
    CHECK_OK(rm_purge(db, 3600.0, &pr));
    CHECK(pr.purged == 0);
    CHECK_OK(rm_purge(db, 0.0, &pr));
    CHECK(pr.purged == 1 && pr.batches == 1 && pr.live_bytes > 0);
    CHECK_STATUS(rm_get_memory(db, gone, &m), RM_NOT_FOUND);
    CHECK(m == NULL);
    CHECK_OK(rm_purge(db, 0.0, NULL));
    (void)keep;
    CHECK_OK(rm_close(db));
}

static void test_hostile_options(const char *path) {
    static const char *bad[] = {"{\"a\": -1}", "{\"a\": 1.5}", "{\"a\": \"5\"}", "{\"a\": 0}", "[1]", "{",
                                "{\"\": 5}", "{\"a\": 1e400}", "null", "{\"a\": 99999999999999999999}"};
    rm_open_options o;
    rm_db *db = (rm_db *)0x1;
    size_t i;
    CHECK_OK(rm_open_options_init(&o));
    o.path = path;
    o.embeddings = false;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.max_memories_json = bad[i];
        CHECK_STATUS(rm_open(&o, &db), RM_INVALID_ARGUMENT);
        CHECK(db == (rm_db *)0x1);
        CHECK(strstr(rm_last_error(), "max_memories") != NULL);
    }
    o.max_memories_json = NULL;
    o.max_memories = UINT64_MAX;
    CHECK_STATUS(rm_open(&o, &db), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "max_memories") != NULL);
    o.max_memories = RM_MAX_BUDGET;
    CHECK_OK(rm_open(&o, &db));
    CHECK_OK(rm_close(db));
}

int main(void) {
    test_db_path p, q, h;
    test_db_path_init(&p, "retention");
    test_db_path_init(&q, "purge");
    test_db_path_init(&h, "hostile");
    test_budget(p.path);
    test_purge(q.path);
    test_hostile_options(h.path);
    test_db_path_remove(&p);
    test_db_path_remove(&q);
    test_db_path_remove(&h);
    puts("test_retention: OK");
    return 0;
}
