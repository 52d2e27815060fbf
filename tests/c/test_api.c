/* Every operation of the C ABI on a temporary database file. */
#include "check.h"

#include <math.h>

static const char *const CTX_A =
    "{\"params\": {\"grip_force\": {\"value\": 12.5, \"unit\": \"N\"}},"
    " \"spatial\": {\"object_position\": [0.1, 0.2, 0.3]},"
    " \"robot\": {\"id\": \"ur5e-01\"}, \"task\": {\"name\": \"pick_cup\", \"success\": true}}";

static int starts_with(const char *s, const char *prefix) {
    return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

static int has_string(const char *const *list, size_t n, const char *s) {
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0) return 1;
    return 0;
}

static rm_recall_result *recall_opts(rm_db *db, const char *query, const char *collection, int n,
                                     const char *filter, const char *spatial) {
    return test_recall_in(db, query, collection, n, filter, spatial, NULL);
}

static int64_t learn_in(rm_db *db, const char *insight, const char *context, const char *collection) {
    return test_learn_in(db, insight, context, collection, NULL);
}

/* A JSON string from an rm_*_json function: an object, then freed. */
#define CHECK_JSON(json_fn, result, needle)                                  \
    do {                                                                     \
        char *json_ = NULL;                                                  \
        CHECK_OK(json_fn(result, &json_));                                   \
        CHECK(json_ != NULL && json_[0] == '{' && json_[strlen(json_) - 1] == '}'); \
        CHECK(strstr(json_, needle) != NULL);                                \
        rm_string_free(json_);                                               \
    } while (0)

static void test_library_functions(void) {
    char v[32];
    static const char *const names[] = {
        "RM_OK", "RM_INVALID_ARGUMENT", "RM_NOT_FOUND", "RM_DUPLICATE", "RM_BUSY", "RM_IO",
        "RM_CORRUPT", "RM_EMBEDDING_UNAVAILABLE", "RM_FULL", "RM_INVALID_STATE",
        "RM_SCHEMA_TOO_NEW", "RM_CLOSED", "RM_READ_ONLY", "RM_INTERNAL", "RM_PANIC", "RM_OVER_BUDGET",
        "RM_KEY"};
    int i;
    CHECK_STREQ(rm_version(), RM_VERSION_STRING);
    snprintf(v, sizeof v, "%d.%d.%d", RM_VERSION_MAJOR, RM_VERSION_MINOR, RM_VERSION_PATCH);
    CHECK_STREQ(rm_version(), v);
    CHECK(RM_OVER_BUDGET == 15 && RM_KEY == 16 && sizeof names / sizeof names[0] == 17);
    for (i = RM_OK; i <= RM_KEY; i++) CHECK_STREQ(rm_status_str(i), names[i]);
    CHECK_STREQ(rm_status_str(17), "RM_UNKNOWN");
    CHECK_STREQ(rm_status_str(-1), "RM_UNKNOWN");
    CHECK_STATUS(rm_learn_options_init(NULL), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "opts") != NULL); /* the message names the field */
    CHECK_OK(rm_learn_options_init(&(rm_learn_options){0}));
    CHECK_STREQ(rm_last_error(), "");
}

static void test_options_defaults(void) {
    rm_open_options o;
    rm_recall_options r;
    rm_perception_options p;
    CHECK_OK(rm_open_options_init(&o));
    CHECK(o.path == NULL && o.default_collection == NULL && o.busy_timeout_ms == 5000);
    CHECK(o.durability == RM_DURABILITY_FULL && o.rrf_k == 60.0 && o.decay_rate == 0.01);
    CHECK(!o.read_only);
    CHECK_OK(rm_recall_options_init(&r));
    CHECK(r.n == 5 && r.min_confidence == 0.3 && r.context_filter == NULL && r.spatial_sort == NULL);
    CHECK_OK(rm_perception_options_init(&p));
    CHECK(p.perception_type == RM_PERCEPTION_VISUAL && p.data == NULL && p.data_len == 0);
}

/* learn: created, exact duplicate, different numbers; recall's typed fields. */
static int64_t test_learn_recall(rm_db *db) {
    rm_learn_options lo;
    rm_learn_result *a = NULL, *dup = NULL;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    const rm_memory *hit;
    int64_t id_a, id_b;
    size_t i;

    CHECK_OK(rm_learn_options_init(&lo));
    lo.context = CTX_A;
    CHECK_OK(rm_learn(db, "grip_force=12.5N works best because the sensor was calibrated", &lo, &a));
    CHECK(a->memory_id > 0 && !a->duplicate && a->dup_method == RM_DUP_NONE && a->similarity == 0.0);
    CHECK(a->category != NULL && a->category[0] != '\0');
    CHECK(a->confidence >= 0.80 && a->confidence <= 0.95);
    CHECK(a->tag_count == 0 || a->tags != NULL);
    id_a = a->memory_id;
    CHECK_JSON(rm_learn_result_json, a, "created");

    CHECK_OK(rm_learn(db, "grip_force=12.5N works best because the sensor was calibrated", &lo, &dup));
    CHECK(dup->duplicate && dup->dup_method == RM_DUP_EXACT && dup->memory_id == id_a);
    CHECK(dup->similarity == 1.0);
    CHECK_JSON(rm_learn_result_json, dup, "duplicate");
    rm_learn_result_free(dup);

    id_b = test_learn(db, "grip_force=15N works best because the sensor was calibrated", NULL);
    CHECK(id_b != id_a);

    /* rm_get_memory returns the tags the learn result reported (in any order). */
    CHECK_OK(rm_get_memory(db, id_a, &m));
    CHECK(m->memory.id == id_a && m->tag_count == a->tag_count && a->tag_count > 0);
    for (i = 0; i < a->tag_count; i++) CHECK(has_string(m->tags, m->tag_count, a->tags[i]));
    CHECK_JSON(rm_memory_result_json, m, "grip_force");
    rm_memory_result_free(m);

    r = test_recall(db, "grip force calibrated", 5);
    CHECK(r->count == 2 && r->mode == RM_MODE_BM25_ONLY && r->hits != NULL);
    CHECK(r->hits[0].score == 1.0 && r->hits[1].score <= 1.0 && r->hits[1].score > 0.0);
    CHECK(!r->hits[0].has_distance && r->query_ms >= 0.0);
    hit = r->hits[0].memory.id == id_a ? &r->hits[0].memory : &r->hits[1].memory;
    CHECK(hit->id == id_a && test_has_id(r, id_b));
    CHECK_STREQ(hit->content, "grip_force=12.5N works best because the sensor was calibrated");
    CHECK_STREQ(hit->category, a->category);
    CHECK_STREQ(hit->collection, "default");
    CHECK(hit->confidence == a->confidence && hit->session_id == NULL);
    CHECK(hit->memory_type == RM_MEMORY_FACT && hit->status == RM_MEMORY_ACTIVE);
    CHECK(hit->superseded_by == 0 && hit->perception_type == RM_PERCEPTION_NONE);
    CHECK(hit->perception_data == NULL && hit->perception_data_len == 0);
    CHECK(hit->created_at && strlen(hit->created_at) >= 20 && hit->created_at[10] == 'T');
    CHECK(hit->created_at[strlen(hit->created_at) - 1] == 'Z' && hit->updated_at != NULL);
    CHECK(starts_with(hit->context_json, "{") && strstr(hit->context_json, "pick_cup"));
    CHECK(hit->params_json && strstr(hit->params_json, "12.5"));
    CHECK(hit->spatial_json && strstr(hit->spatial_json, "object_position"));
    CHECK(hit->robot_json && strstr(hit->robot_json, "ur5e-01"));
    CHECK(hit->task_json && strstr(hit->task_json, "pick_cup"));
    CHECK_JSON(rm_recall_result_json, r, "\"memories\"");
    rm_recall_result_free(r);
    rm_learn_result_free(a);

    /* A memory learned without params/spatial/robot/task has no lifted fields. */
    r = test_recall(db, "15N", 5);
    CHECK(r->count == 1 && r->hits[0].memory.id == id_b);
    CHECK(r->hits[0].memory.params_json == NULL && r->hits[0].memory.task_json == NULL);
    rm_recall_result_free(r);

    /* Chinese text is segmented for search. */
    id_b = test_learn(db, "推动任务最终距离0.032米，抓取杯子成功", "{\"task\": {\"success\": true}}");
    r = test_recall(db, "抓取杯子", 5);
    CHECK(r->count >= 1 && r->hits[0].memory.id == id_b);
    rm_recall_result_free(r);
    return id_a;
}

/* 60 non-matching memories that rank higher than the 5 matching ones. */
static void test_context_filter(rm_db *db) {
    char text[64], ctx[96];
    int64_t ok_ids[5];
    rm_recall_result *r;
    size_t i;
    int k;
    for (k = 0; k < 5; k++) {
        snprintf(text, sizeof text, "grasp attempt %d on mug", k);
        snprintf(ctx, sizeof ctx, "{\"task\": {\"success\": true}, \"params\": {\"force\": {\"value\": %d}}}", 10 + k);
        ok_ids[k] = learn_in(db, text, ctx, "filters");
    }
    for (k = 0; k < 60; k++) {
        snprintf(text, sizeof text, "grasp attempt %d on mug", 100 + k);
        learn_in(db, text, "{\"task\": {\"success\": false}}", "filters");
    }
    r = recall_opts(db, "grasp mug", "filters", 5, "{\"task.success\": true}", NULL);
    CHECK(r->count == 5);
    for (k = 0; k < 5; k++) CHECK(test_has_id(r, ok_ids[k]));
    rm_recall_result_free(r);

    r = recall_opts(db, "grasp mug", "filters", 100, "{\"task.success\": false}", NULL);
    CHECK(r->count == 60);
    for (k = 0; k < 5; k++) CHECK(!test_has_id(r, ok_ids[k]));
    rm_recall_result_free(r);

    r = recall_opts(db, "grasp mug", "filters", 100,
                    "{\"task.success\": true, \"params.force.value\": {\"$gte\": 12, \"$lt\": 14}}", NULL);
    CHECK(r->count == 2 && test_has_id(r, ok_ids[2]) && test_has_id(r, ok_ids[3]));
    for (i = 0; i < r->count; i++) CHECK(strstr(r->hits[i].memory.context_json, "\"success\":true") ||
                                         strstr(r->hits[i].memory.context_json, "\"success\": true"));
    rm_recall_result_free(r);

    /* A filter on a path no memory has matches nothing. */
    r = recall_opts(db, "grasp mug", "filters", 100, "{\"env.sim_or_real\": \"real\"}", NULL);
    CHECK(r->count == 0 && r->hits == NULL);
    rm_recall_result_free(r);

    r = recall_opts(db, "*", "filters", 100, NULL, NULL);
    CHECK(r->count == 65 && r->mode == RM_MODE_SCAN);
    rm_recall_result_free(r);
}

static void test_spatial_sort(rm_db *db) {
    const char *sort = "{\"field\": \"spatial.pos\", \"target\": [0, 0, 0]}";
    int64_t far = learn_in(db, "pick box at far shelf", "{\"spatial\": {\"pos\": [5.0, 5.0, 0.0]}}", "spatial");
    int64_t near = learn_in(db, "pick box at near table", "{\"spatial\": {\"pos\": [0.1, 0.0, 0.0]}}", "spatial");
    int64_t mid = learn_in(db, "pick box at middle cart", "{\"spatial\": {\"pos\": [0.0, 1.0, 0.0]}}", "spatial");
    int64_t none = learn_in(db, "pick box somewhere unknown", NULL, "spatial");
    rm_recall_result *r = recall_opts(db, "pick box", "spatial", 10, NULL, sort);
    CHECK(r->count == 4);
    CHECK(r->hits[0].memory.id == near && r->hits[1].memory.id == mid && r->hits[2].memory.id == far);
    CHECK(r->hits[0].has_distance && fabs(r->hits[0].distance - 0.1) < 1e-9);
    CHECK(r->hits[1].has_distance && fabs(r->hits[1].distance - 1.0) < 1e-9);
    CHECK(fabs(r->hits[2].distance - sqrt(50.0)) < 1e-9);
    CHECK(r->hits[3].memory.id == none && r->hits[3].has_distance && isinf(r->hits[3].distance));
    CHECK_JSON(rm_recall_result_json, r, "\"memories\"");
    rm_recall_result_free(r);

    r = recall_opts(db, "pick box", "spatial", 10, NULL,
                    "{\"field\": \"spatial.pos\", \"target\": [0, 0, 0], \"max_distance\": 1.0}");
    CHECK(r->count == 2 && r->hits[0].memory.id == near && r->hits[1].memory.id == mid);
    rm_recall_result_free(r);
}

/* Binary perception data with NUL bytes comes back byte for byte. */
static void test_perception(rm_db *db) {
    static const uint8_t data[] = {0x00, 0x01, 0xff, 0x00, 'N', 0x00, 0x80, 0x7f, 0x00};
    rm_perception_options o;
    rm_perception_result *p = NULL, *dup = NULL;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    CHECK_OK(rm_perception_options_init(&o));
    o.perception_type = RM_PERCEPTION_TACTILE;
    o.data = data;
    o.data_len = sizeof data;
    o.metadata = "{\"format\": \"raw\", \"rate_hz\": 100}";
    o.context = "{\"task\": {\"name\": \"cup_grasp\"}}";
    CHECK_OK(rm_save_perception(db, "fingertip pressure burst during cup grasp", &o, &p));
    CHECK(p->memory_id > 0 && !p->duplicate && p->perception_type == RM_PERCEPTION_TACTILE);
    CHECK_STREQ(p->collection, "default");
    CHECK_JSON(rm_perception_result_json, p, "tactile");

    CHECK_OK(rm_save_perception(db, "fingertip pressure burst during cup grasp", &o, &dup));
    CHECK(dup->duplicate && dup->memory_id == p->memory_id);
    rm_perception_result_free(dup);

    CHECK_OK(rm_get_memory(db, p->memory_id, &m));
    CHECK(m->memory.memory_type == RM_MEMORY_PERCEPTION);
    CHECK(m->memory.perception_type == RM_PERCEPTION_TACTILE);
    CHECK(m->memory.perception_data_len == sizeof data);
    CHECK(memcmp(m->memory.perception_data, data, sizeof data) == 0);
    CHECK(m->memory.perception_metadata && strstr(m->memory.perception_metadata, "rate_hz"));
    CHECK(m->memory.task_json && strstr(m->memory.task_json, "cup_grasp"));
    CHECK_JSON(rm_memory_result_json, m, "base64");
    rm_memory_result_free(m);

    r = test_recall(db, "fingertip pressure", 5);
    CHECK(r->count == 1 && r->hits[0].memory.id == p->memory_id);
    CHECK(r->hits[0].memory.perception_data_len == sizeof data);
    rm_recall_result_free(r);
    rm_perception_result_free(p);
}

static void test_forget_update(rm_db *db) {
    int64_t id = test_learn(db, "grip force 15N optimal for mugs", NULL);
    int64_t left = test_learn(db, "approach mugs from the left side", NULL);
    int64_t right = test_learn(db, "approach mugs from the right side", NULL);
    rm_forget_result *f = NULL;
    rm_update_result *u = NULL;
    rm_memory_result *m = NULL;
    rm_recall_result *r;

    CHECK_OK(rm_forget(db, id, "sensor calibration error", &f));
    CHECK(f->memory_id == id);
    CHECK_STREQ(f->content, "grip force 15N optimal for mugs");
    CHECK_STREQ(f->reason, "sensor calibration error");
    CHECK_JSON(rm_forget_result_json, f, "sensor calibration error");
    rm_forget_result_free(f);
    r = test_recall(db, "optimal mugs", 5);
    CHECK(!test_has_id(r, id));
    rm_recall_result_free(r);
    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK(m->memory.status == RM_MEMORY_INVALIDATED);
    rm_memory_result_free(m);
    CHECK_STATUS(rm_forget(db, id, "again", NULL), RM_INVALID_STATE);
    CHECK_STATUS(rm_update(db, id, "grip force 16N", NULL, NULL), RM_INVALID_STATE);
    CHECK_STATUS(rm_forget(db, 987654321, "no such memory", NULL), RM_NOT_FOUND);
    CHECK_STATUS(rm_update(db, 987654321, "no such memory", NULL, NULL), RM_NOT_FOUND);

    /* Updating to the content of another active memory changes nothing. */
    CHECK_STATUS(rm_update(db, left, "approach mugs from the right side", NULL, &u), RM_DUPLICATE);
    CHECK(u == NULL);
    CHECK_OK(rm_get_memory(db, left, &m));
    CHECK_STREQ(m->memory.content, "approach mugs from the left side");
    rm_memory_result_free(m);

    CHECK_OK(rm_update(db, left, "approach mugs from above with an open gripper",
                       "{\"task\": {\"name\": \"mug_approach\"}}", &u));
    CHECK(u->memory_id == left);
    CHECK_STREQ(u->old_content, "approach mugs from the left side");
    CHECK_STREQ(u->new_content, "approach mugs from above with an open gripper");
    CHECK(u->category != NULL && u->confidence > 0.0);
    CHECK_JSON(rm_update_result_json, u, "open gripper");
    rm_update_result_free(u);
    r = test_recall(db, "above gripper", 5);
    CHECK(r->count >= 1 && r->hits[0].memory.id == left);
    CHECK(r->hits[0].memory.task_json && strstr(r->hits[0].memory.task_json, "mug_approach"));
    rm_recall_result_free(r);
    r = test_recall(db, "left", 5);
    CHECK(!test_has_id(r, left));
    rm_recall_result_free(r);
    CHECK(right > 0);
}

static void test_sessions(rm_db *db) {
    rm_session *s = NULL;
    rm_session_summary *sum = NULL;
    rm_learn_options lo;
    rm_recall_options ro;
    rm_recall_result *r = NULL;
    double score = 0.8;
    int64_t in_total = 0, cat_total = 0;
    size_t i, active = test_count(db);

    CHECK_OK(rm_start_session(db, NULL, "{\"robot\": {\"id\": \"ur5e-01\"}}", &s));
    CHECK(s->session_id && strlen(s->session_id) == 36);
    CHECK(s->session_id[8] == '-' && s->session_id[13] == '-' && s->session_id[23] == '-');
    CHECK_STREQ(s->collection, "default");
    CHECK(s->active_memories_count == (int64_t)active);
    CHECK_JSON(rm_session_json, s, s->session_id);

    CHECK_OK(rm_learn_options_init(&lo));
    lo.session_id = s->session_id;
    CHECK_OK(rm_learn(db, "sponge wiping leaves streaks at 5N", &lo, NULL));
    CHECK_OK(rm_learn(db, "wiping in circles at 8N removes the streaks", &lo, NULL));

    CHECK_OK(rm_recall_options_init(&ro));
    ro.session_id = s->session_id;
    CHECK_OK(rm_recall(db, "*", &ro, &r));
    CHECK(r->count == 2 && r->hits[0].memory.session_id != NULL);
    CHECK_STREQ(r->hits[0].memory.session_id, s->session_id);
    rm_recall_result_free(r);

    CHECK_OK(rm_end_session(db, s->session_id, &score, &sum));
    CHECK_STREQ(sum->session_id, s->session_id);
    CHECK(sum->has_outcome_score && sum->outcome_score == 0.8 && sum->memory_count == 2);
    for (i = 0; i < sum->by_type_count; i++) in_total += sum->by_type[i].count;
    for (i = 0; i < sum->by_category_count; i++) cat_total += sum->by_category[i].count;
    CHECK(in_total == 2 && cat_total == 2 && sum->by_type[0].name != NULL);
    CHECK(sum->related_count == 0 || sum->related != NULL);
    CHECK_JSON(rm_session_summary_json, sum, s->session_id);
    rm_session_summary_free(sum);
    rm_session_free(s);

    CHECK_OK(rm_start_session(db, "episodes", NULL, &s));
    CHECK_STREQ(s->collection, "episodes");
    CHECK_OK(rm_end_session(db, s->session_id, NULL, &sum));
    CHECK(!sum->has_outcome_score && sum->memory_count == 0);
    rm_session_summary_free(sum);
    rm_session_free(s);

    lo.session_id = "00000000-0000-4000-8000-000000000000";
    CHECK_STATUS(rm_learn(db, "unknown session memory", &lo, NULL), RM_NOT_FOUND);
    CHECK_STATUS(rm_end_session(db, lo.session_id, &score, NULL), RM_NOT_FOUND);
}

/* Two handles on one file (as two ROS nodes would have) see each other's writes. */
static void test_two_handles(rm_db *db, const char *path) {
    rm_db *other = test_open(path);
    rm_learn_result *dup = NULL;
    rm_recall_result *r;
    int64_t id = test_learn(other, "conveyor belt speed 0.3 m/s suits small parts", NULL);
    r = test_recall(db, "conveyor belt", 5);
    CHECK(r->count == 1 && r->hits[0].memory.id == id);
    rm_recall_result_free(r);
    CHECK_OK(rm_learn(db, "conveyor belt speed 0.3 m/s suits small parts", NULL, &dup));
    CHECK(dup->duplicate && dup->memory_id == id);
    rm_learn_result_free(dup);
    CHECK_OK(rm_close(other));
}

/* read_only: reads work, recall records no access, every write is RM_READ_ONLY. */
static void test_read_only(const char *path, int64_t id) {
    rm_open_options o;
    rm_db *ro = NULL;
    rm_memory_result *before = NULL, *after = NULL;
    rm_learn_result *l = NULL;
    rm_recall_result *r;
    bool found;
    CHECK_OK(rm_open_options_init(&o));
    o.path = path;
    o.embeddings = false;
    o.read_only = true;
    CHECK_OK(rm_open(&o, &ro));
    CHECK_OK(rm_get_memory(ro, id, &before));
    r = test_recall(ro, "grip_force works best because the sensor was calibrated", 5);
    found = false;
    for (size_t i = 0; i < r->count; i++) found = found || r->hits[i].memory.id == id;
    CHECK(found);
    rm_recall_result_free(r);
    CHECK_OK(rm_get_memory(ro, id, &after));
    CHECK(after->memory.access_count == before->memory.access_count);
    CHECK_STATUS(rm_learn(ro, "a read-only handle stores nothing", NULL, &l), RM_READ_ONLY);
    CHECK(l == NULL);
    CHECK_STATUS(rm_flush(ro), RM_READ_ONLY);
    CHECK_OK(rm_close(ro));
    rm_memory_result_free(before);
    rm_memory_result_free(after);
}

/* Expiry: a past expires_at is expired at once and out of recall; rm_set_expiry
 * renews it; a bad ttl is refused by name. */
static void test_expiry(rm_db *db) {
    rm_learn_options lo;
    rm_learn_result *l = NULL;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    int64_t id;
    CHECK_OK(rm_learn_options_init(&lo));
    CHECK(lo.ttl_seconds == 0.0 && lo.expires_at == NULL);
    lo.expires_at = "2020-01-01T00:00:00Z";
    CHECK_OK(rm_learn(db, "the loading ramp at gate 7 is closed for repairs", &lo, &l));
    id = l->memory_id;
    rm_learn_result_free(l);
    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK(m->memory.expired && m->memory.expires_at != NULL && m->memory.status == RM_MEMORY_ACTIVE);
    rm_memory_result_free(m);
    r = test_recall(db, "loading ramp gate 7", 5);
    for (size_t i = 0; i < r->count; i++) CHECK(r->hits[i].memory.id != id);
    rm_recall_result_free(r);
    CHECK_OK(rm_set_expiry(db, id, 3600.0, NULL));
    r = test_recall(db, "loading ramp gate 7", 5);
    CHECK(r->count >= 1 && r->hits[0].memory.id == id && !r->hits[0].memory.expired);
    rm_recall_result_free(r);
    CHECK_OK(rm_set_expiry(db, id, 0.0, NULL));
    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK(!m->memory.expired && m->memory.expires_at == NULL);
    rm_memory_result_free(m);
    lo.expires_at = NULL;
    lo.ttl_seconds = -1.0;
    CHECK_STATUS(rm_learn(db, "a fact with a negative lifetime", &lo, &l), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "ttl_seconds") != NULL);
    CHECK_STATUS(rm_set_expiry(db, id, 10.0, "2030-01-01T00:00:00Z"), RM_INVALID_ARGUMENT);
}

int main(void) {
    test_db_path p;
    rm_db *db;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    size_t before;
    int64_t id_a;

    test_library_functions();
    test_options_defaults();
    test_db_path_init(&p, "api");
    db = test_open(p.path);
    id_a = test_learn_recall(db);
    test_context_filter(db);
    test_spatial_sort(db);
    test_perception(db);
    test_forget_update(db);
    test_sessions(db);
    test_expiry(db);
    test_two_handles(db, p.path);
    CHECK_OK(rm_flush(db));

    /* Persistence: close, reopen, same memories and access counts. */
    before = test_count(db);
    CHECK(before > 5);
    CHECK_OK(rm_close(db));
    db = test_open(p.path);
    CHECK(test_count(db) == before);
    CHECK_OK(rm_get_memory(db, id_a, &m));
    CHECK_STREQ(m->memory.content, "grip_force=12.5N works best because the sensor was calibrated");
    CHECK(m->memory.access_count >= 1 && m->memory.last_accessed != NULL);
    r = recall_opts(db, "grasp mug", "filters", 5, "{\"task.success\": true}", NULL);
    CHECK(r->count == 5);
    CHECK_OK(rm_close(db));
    test_read_only(p.path, id_a);
    /* Results outlive the handle. */
    CHECK_STREQ(m->memory.content, "grip_force=12.5N works best because the sensor was calibrated");
    CHECK(r->hits[4].memory.content != NULL && r->hits[4].memory.id > 0);
    rm_memory_result_free(m);
    rm_recall_result_free(r);
    test_db_path_remove(&p);
    puts("test_api: OK");
    return 0;
}
