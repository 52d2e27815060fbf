/* Constraints over all memories (issue 12): a recall with context_filter,
 * session_id or spatial_sort returns min(n, memories satisfying them) — the
 * query's matches first, then the other memories that satisfy them (newest
 * first; with spatial_sort the nearest, whatever the query's words) — and each
 * hit says whether it matched the query. Most memories here share no word with
 * the query. BM25 only (no model). */
#include "check.h"

#include <math.h>

#define N_MEM 40

static int64_t ids[N_MEM];
static double pos[N_MEM][2];
static int success[N_MEM];
static int matches_query[N_MEM];

static int64_t learn_full(rm_db *db, const char *insight, const char *context, const char *session) {
    return test_learn_in(db, insight, context, "yard", session);
}

static rm_recall_result *recall(rm_db *db, const char *query, int n, const char *filter, const char *spatial,
                                const char *session) {
    rm_recall_result *r = test_recall_in(db, query, "yard", n, filter, spatial, session);
    CHECK(r->query_vector == RM_QUERY_VECTOR_NONE);
    return r;
}

static int index_of(int64_t id) {
    int i;
    for (i = 0; i < N_MEM; i++)
        if (ids[i] == id) return i;
    CHECK(!"a hit that was not learned here");
    return -1;
}

/* Learns N_MEM memories: every fifth mentions "gripper torque" (the query),
 * the rest share no word with it; positions on a spiral, success alternating. */
static void learn_all(rm_db *db) {
    static const char *const others[] = {
        "pallet wrapped before the forklift arrived at dock %d",
        "camera exposure lowered for the bright loading bay %d",
        "wheel odometry drifted on polished concrete in aisle %d",
        "charging contact cleaned after voltage dropped on station %d",
    };
    char text[160], ctx[160];
    int i;
    for (i = 0; i < N_MEM; i++) {
        double a = i * 0.7, rad = 0.5 + i * 0.25;
        pos[i][0] = rad * cos(a);
        pos[i][1] = rad * sin(a);
        success[i] = i % 2 == 0;
        matches_query[i] = i % 5 == 0;
        if (matches_query[i])
            snprintf(text, sizeof text, "gripper torque limit raised to %d Nm for crate %d", 5 + i, i);
        else
            snprintf(text, sizeof text, others[i % 4], i);
        snprintf(ctx, sizeof ctx, "{\"task\": {\"success\": %s}, \"spatial\": {\"pos\": [%.6f, %.6f]}}",
                 success[i] ? "true" : "false", pos[i][0], pos[i][1]);
        ids[i] = learn_full(db, text, ctx, NULL);
    }
}

/* context_filter: every successful memory, the matching ones first (score > 0),
 * then the others newest first (matched false, score 0). */
static void test_filter(rm_db *db) {
    int want = 0, matched = 0, i;
    size_t k;
    rm_recall_result *r;
    for (i = 0; i < N_MEM; i++) {
        want += success[i];
        matched += success[i] && matches_query[i];
    }
    r = recall(db, "gripper torque", 100, "{\"task.success\": true}", NULL, NULL);
    CHECK(r->count == (size_t)want && r->mode == RM_MODE_BM25_ONLY);
    for (k = 0; k < r->count; k++) {
        int j = index_of(r->hits[k].memory.id);
        CHECK(success[j]);
        CHECK(r->hits[k].matched == (k < (size_t)matched));
        CHECK(r->hits[k].matched == (bool)matches_query[j]);
        CHECK(r->hits[k].matched ? r->hits[k].score > 0 && r->hits[k].has_lexical : r->hits[k].score == 0);
        if (k > (size_t)matched) CHECK(r->hits[k].memory.id < r->hits[k - 1].memory.id); /* newest first */
    }
    CHECK(r->hits[0].score == 1.0);
    rm_recall_result_free(r);

    /* n smaller than the matches: matches only, best first. */
    r = recall(db, "gripper torque", 2, "{\"task.success\": true}", NULL, NULL);
    CHECK(r->count == 2 && r->hits[0].matched && r->hits[1].matched);
    rm_recall_result_free(r);

    /* No constraint: matches only. */
    r = recall(db, "gripper torque", 100, NULL, NULL, NULL);
    CHECK(r->count == N_MEM / 5);
    for (k = 0; k < r->count; k++) CHECK(r->hits[k].matched);
    rm_recall_result_free(r);

    /* A query no memory shares a word with, filtered: still every match of the filter. */
    r = recall(db, "hydraulic elbow", 7, "{\"task.success\": false}", NULL, NULL);
    CHECK(r->count == 7);
    for (k = 0; k < r->count; k++) {
        CHECK(!r->hits[k].matched && !success[index_of(r->hits[k].memory.id)]);
        if (k > 0) CHECK(r->hits[k].memory.id < r->hits[k - 1].memory.id);
    }
    rm_recall_result_free(r);
}

/* spatial_sort: the true n nearest among the memories satisfying the filter,
 * whatever the query's words. */
static void test_spatial(rm_db *db) {
    const double target[2] = {1.0, -2.0};
    const int n = 6;
    int order[N_MEM], cnt = 0, i, j;
    size_t k;
    rm_recall_result *r;
    for (i = 0; i < N_MEM; i++)
        if (success[i]) order[cnt++] = i;
    for (i = 1; i < cnt; i++) /* insertion sort by distance */
        for (j = i; j > 0; j--) {
            int a = order[j - 1], b = order[j];
            double da = hypot(pos[a][0] - target[0], pos[a][1] - target[1]);
            double db_ = hypot(pos[b][0] - target[0], pos[b][1] - target[1]);
            if (db_ < da) {
                order[j - 1] = b;
                order[j] = a;
            }
        }
    r = recall(db, "gripper torque", n, "{\"task.success\": true}",
               "{\"field\": \"spatial.pos\", \"target\": [1.0, -2.0]}", NULL);
    CHECK(r->count == (size_t)n);
    for (k = 0; k < r->count; k++) {
        int m = order[k];
        CHECK(r->hits[k].memory.id == ids[m]);
        CHECK(r->hits[k].has_distance &&
              fabs(r->hits[k].distance - hypot(pos[m][0] - target[0], pos[m][1] - target[1])) < 1e-5);
        CHECK(r->hits[k].matched == (bool)matches_query[m]);
    }
    rm_recall_result_free(r);

    /* max_distance bounds the set: every satisfying memory within it, nearest first. */
    r = recall(db, "completely unrelated words", 100, "{\"task.success\": true}",
               "{\"field\": \"spatial.pos\", \"target\": [1.0, -2.0], \"max_distance\": 4.0}", NULL);
    for (i = 0, j = 0; i < cnt; i++)
        j += hypot(pos[order[i]][0] - target[0], pos[order[i]][1] - target[1]) <= 4.0;
    CHECK(j > 2 && r->count == (size_t)j);
    for (k = 0; k < r->count; k++) CHECK(r->hits[k].memory.id == ids[order[k]] && !r->hits[k].matched);
    rm_recall_result_free(r);
}

/* session_id: every memory of the session, whatever the query. */
static void test_session(rm_db *db) {
    rm_session *s = NULL;
    rm_recall_result *r;
    int64_t in[3];
    size_t k;
    CHECK_OK(rm_start_session(db, "yard", NULL, &s));
    in[0] = learn_full(db, "tote stacked three high near the mezzanine", NULL, s->session_id);
    in[1] = learn_full(db, "gripper torque tuned for heavy totes", NULL, s->session_id);
    in[2] = learn_full(db, "mezzanine lift waited for the safety gate", NULL, s->session_id);
    r = recall(db, "gripper torque", 10, NULL, NULL, s->session_id);
    CHECK(r->count == 3);
    CHECK(r->hits[0].memory.id == in[1] && r->hits[0].matched);
    CHECK(r->hits[1].memory.id == in[2] && !r->hits[1].matched && r->hits[1].score == 0);
    CHECK(r->hits[2].memory.id == in[0] && !r->hits[2].matched);
    for (k = 0; k < r->count; k++) CHECK_STREQ(r->hits[k].memory.session_id, s->session_id);
    rm_recall_result_free(r);
    rm_session_free(s);
}

int main(void) {
    test_db_path p;
    rm_db *db;
    char *json = NULL;
    rm_recall_result *r;
    test_db_path_init(&p, "constraints");
    db = test_open(p.path);
    learn_all(db);
    test_filter(db);
    test_spatial(db);
    test_session(db);
    r = recall(db, "gripper torque", 10, "{\"task.success\": false}", NULL, NULL);
    CHECK_OK(rm_recall_result_json(r, &json));
    CHECK(strstr(json, "\"_matched\":false") && strstr(json, "\"_matched\":true"));
    CHECK(strstr(json, "\"query_vector\":\"none\""));
    rm_string_free(json);
    rm_recall_result_free(r);
    CHECK_OK(rm_close(db));
    test_db_path_remove(&p);
    puts("test_constraints: OK");
    return 0;
}
