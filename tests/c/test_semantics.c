/* Memory semantics through the C ABI: user tags kept across updates, dedup across
 * sessions and its guards (numbers, outcomes, substitutions), consolidation and
 * proactive recall at end_session, ended sessions, perception category. */
#include "check.h"

static int has_tag(const rm_memory_result *m, const char *tag) {
    size_t i;
    for (i = 0; i < m->tag_count; i++)
        if (strcmp(m->tags[i], tag) == 0) return 1;
    return 0;
}

static const char *start(rm_db *db, rm_session **s) {
    CHECK_OK(rm_start_session(db, NULL, NULL, s));
    return (*s)->session_id;
}

static rm_learn_result *learn_in(rm_db *db, const char *text, const char *session) {
    rm_learn_options o;
    rm_learn_result *r = NULL;
    CHECK_OK(rm_learn_options_init(&o));
    o.session_id = session;
    CHECK_OK(rm_learn(db, text, &o, &r));
    return r;
}

static void user_tags(rm_db *db) {
    const char *tags[] = {"Robot Arm", "  kitchen  ", "robot-arm"};
    rm_learn_options o;
    rm_learn_result *r = NULL;
    rm_memory_result *m = NULL;
    int64_t id;
    CHECK_OK(rm_learn_options_init(&o));
    o.tags = tags;
    o.tag_count = 3;
    CHECK_OK(rm_learn(db, "wipe the counter before placing plates", &o, &r));
    id = r->memory_id;
    rm_learn_result_free(r);
    CHECK_OK(rm_update(db, id, "wipe the counter twice before placing plates", NULL, NULL));
    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK(has_tag(m, "robot_arm") && has_tag(m, "kitchen")); /* normalised, deduplicated, kept */
    rm_memory_result_free(m);
    o.tag_count = 2;
    o.tags = NULL;
    CHECK_STATUS(rm_learn(db, "tags pointer missing", &o, NULL), RM_INVALID_ARGUMENT);
}

static void dedup_across_sessions_and_guards(rm_db *db) {
    rm_session *s1 = NULL, *s2 = NULL;
    rm_learn_result *a, *b;
    a = learn_in(db, "grasp of blue tray succeeded at 30.7N, approach 80deg", start(db, &s1));
    b = learn_in(db, "grasp of blue tray succeeded at 30.7N, approach 80deg", start(db, &s2));
    CHECK(!a->duplicate && b->duplicate && b->dup_method == RM_DUP_EXACT && b->memory_id == a->memory_id);
    rm_learn_result_free(b);
    b = learn_in(db, "Grasp of the blue tray succeeded at 30.7N, approach 80deg!", NULL);
    CHECK(b->duplicate && b->dup_method == RM_DUP_JACCARD && b->memory_id == a->memory_id && b->similarity > 0.7);
    rm_learn_result_free(b);
    b = learn_in(db, "grasp of blue apple succeeded at 30.7N, approach 80deg", NULL); /* substituted */
    CHECK(!b->duplicate);
    rm_learn_result_free(b);
    b = learn_in(db, "grasp of blue tray failed at 30.7N, approach 80deg", NULL); /* other outcome */
    CHECK(!b->duplicate);
    rm_learn_result_free(b);
    b = learn_in(db, "grasp of blue tray succeeded at 31.7N, approach 80deg", NULL); /* other number */
    CHECK(!b->duplicate);
    rm_learn_result_free(b);
    rm_learn_result_free(a);
    rm_session_free(s1);
    rm_session_free(s2);
}

static void end_session_consolidates_and_relates(rm_db *db) {
    rm_session *s = NULL;
    rm_session_summary *sum = NULL;
    rm_learn_result *a, *b, *c, *d;
    const char *sid = start(db, &s);
    double score = 0.75;
    int64_t other = test_learn(db, "shelf approach speed tuned on the left side", NULL);
    a = learn_in(db, "approach the shelf slowly from the left side with the arm extended", sid);
    b = learn_in(db, "approach the shelf slowly from the left", sid);
    c = learn_in(db, "grasp failed: mug slipped at 9.1N from the left side", sid);
    d = learn_in(db, "grasp succeeded: mug held at 9.1N from the left side", sid);
    CHECK_OK(rm_end_session(db, sid, &score, &sum));
    CHECK(sum->has_outcome_score && sum->outcome_score == 0.75);
    CHECK(sum->memory_count == 4 && sum->merged_groups == 1 && sum->superseded_count == 1);
    CHECK(sum->related_count >= 1 && sum->related[0].memory.id == other);
    {
        rm_memory_result *m = NULL;
        /* The survivor holds every word of the other: "with the arm extended" is kept. */
        CHECK_OK(rm_get_memory(db, b->memory_id, &m));
        CHECK(m->memory.status == RM_MEMORY_SUPERSEDED && m->memory.superseded_by == a->memory_id);
        rm_memory_result_free(m);
        CHECK_OK(rm_get_memory(db, c->memory_id, &m)); /* failure vs success: never merged */
        CHECK(m->memory.status == RM_MEMORY_ACTIVE);
        rm_memory_result_free(m);
    }
    CHECK_STATUS(rm_end_session(db, sid, NULL, NULL), RM_INVALID_STATE);
    CHECK_STATUS(rm_learn(db, "a late note after the episode", &(rm_learn_options){.session_id = sid}, NULL),
                 RM_INVALID_STATE);
    rm_session_summary_free(sum);
    rm_session_free(s);
    rm_learn_result_free(a);
    rm_learn_result_free(b);
    rm_learn_result_free(c);
    rm_learn_result_free(d);
}

static void perception_is_observation(rm_db *db) {
    static const unsigned char data[] = {0, 1, 2, 255};
    rm_perception_options o;
    rm_perception_result *r = NULL;
    rm_memory_result *m = NULL;
    CHECK_OK(rm_perception_options_init(&o));
    o.perception_type = RM_PERCEPTION_TACTILE;
    o.data = data;
    o.data_len = sizeof data;
    CHECK_OK(rm_save_perception(db, "fingertip pressure while lifting the kettle", &o, &r));
    CHECK_OK(rm_get_memory(db, r->memory_id, &m));
    CHECK_STREQ(m->memory.category, "observation");
    CHECK(m->memory.perception_data_len == 4 && memcmp(m->memory.perception_data, data, 4) == 0);
    rm_memory_result_free(m);
    rm_perception_result_free(r);
}

int main(void) {
    test_db_path p;
    rm_db *db;
    test_db_path_init(&p, "semantics");
    db = test_open(p.path);
    user_tags(db);
    dedup_across_sessions_and_guards(db);
    end_session_consolidates_and_relates(db);
    perception_is_observation(db);
    CHECK_OK(rm_close(db));
    test_db_path_remove(&p);
    puts("test_semantics: ok");
    return 0;
}
