/* Hostile input through every exported function: a status, never a crash, and
 * the database content unchanged afterwards. Needs no embedding model: handles
 * have none (ROBOTMEM_MODEL_DIR / ROBOTMEM_ORT_LIBRARY are cleared first), or
 * name a model directory that does not exist. */
#include "check.h"

#include <limits.h>
#include <math.h>

#define BIG (10u * 1024u * 1024u) /* 10 MB strings */

/* Every string argument of the API, as "slots" set one at a time. */
enum slot {
    OPEN_PATH, OPEN_DEFAULT_COLLECTION, OPEN_MODEL_DIR, OPEN_ORT_LIBRARY,
    LEARN_INSIGHT, LEARN_CONTEXT, LEARN_COLLECTION, LEARN_SESSION,
    RECALL_QUERY, RECALL_COLLECTION, RECALL_SESSION, RECALL_FILTER, RECALL_SPATIAL,
    PERC_DESCRIPTION, PERC_METADATA, PERC_CONTEXT, PERC_COLLECTION, PERC_SESSION,
    FORGET_REASON, UPDATE_CONTENT, UPDATE_CONTEXT,
    SESSION_COLLECTION, SESSION_CONTEXT, END_SESSION_ID,
    BATCH_INSIGHT, BATCH_CONTEXT, BATCH_COLLECTION,
    SLOT_COUNT
};

#define OK RM_OK
#define INV RM_INVALID_ARGUMENT
/* Expected status per slot for NULL, "", a blank string and a 10 MB string.
 * Blank optional strings mean "none"; a 10 MB path cannot be opened (RM_IO). A
 * model directory or runtime that cannot be used does not fail rm_open (the
 * handle runs BM25 only). The BATCH_* slots are those of items[1] of a
 * two-item rm_learn_batch(). */
static const struct { const char *name; rm_status null_, empty, blank, big; } SLOTS[SLOT_COUNT] = {
    {"rm_open_options.path", OK, INV, INV, RM_IO},
    {"rm_open_options.default_collection", OK, INV, INV, INV},
    {"rm_open_options.model_dir", OK, OK, OK, OK},
    {"rm_open_options.ort_library", OK, OK, OK, OK},
    {"rm_learn insight", INV, INV, INV, INV},
    {"rm_learn_options.context", OK, OK, OK, INV},
    {"rm_learn_options.collection", OK, OK, OK, INV},
    {"rm_learn_options.session_id", OK, OK, OK, INV},
    {"rm_recall query", INV, INV, INV, INV},
    {"rm_recall_options.collection", OK, OK, OK, INV},
    {"rm_recall_options.session_id", OK, OK, OK, INV},
    {"rm_recall_options.context_filter", OK, INV, INV, INV},
    {"rm_recall_options.spatial_sort", OK, INV, INV, INV},
    {"rm_save_perception description", INV, INV, INV, INV},
    {"rm_perception_options.metadata", OK, OK, OK, INV},
    {"rm_perception_options.context", OK, OK, OK, INV},
    {"rm_perception_options.collection", OK, OK, OK, INV},
    {"rm_perception_options.session_id", OK, OK, OK, INV},
    {"rm_forget reason", INV, INV, INV, INV},
    {"rm_update new_content", INV, INV, INV, INV},
    {"rm_update context", OK, OK, OK, INV},
    {"rm_start_session collection", OK, OK, OK, INV},
    {"rm_start_session context", OK, OK, OK, INV},
    {"rm_end_session session_id", INV, INV, INV, INV},
    {"rm_learn_batch items[1].insight", INV, INV, INV, INV},
    {"rm_learn_batch items[1].opts->context", OK, OK, OK, INV},
    {"rm_learn_batch items[1].opts->collection", OK, OK, OK, INV},
};

/* A database and one of its active memories. */
typedef struct { rm_db *db; int64_t id; const char *path; } fixture;

static fixture main_fx;    /* must end up unchanged: only failing calls go here */
static fixture scratch_fx; /* calls that are expected to succeed */
static char scratch_open_path[320];
static int serial;

/* Calls the function that owns `slot` with `v` there and valid values elsewhere. */
static rm_status call_slot(const fixture *fx, enum slot s, const char *v) {
    char text[64];
    rm_open_options oo;
    rm_learn_options lo;
    rm_recall_options ro;
    rm_perception_options po;
    rm_db *db = NULL;
    rm_recall_result *rr = NULL;
    rm_session *sess = NULL;
    rm_learn_item items[2];
    rm_learn_batch_result *batch = NULL;
    char first[64];
    rm_status st;
    snprintf(text, sizeof text, "baseline text number %d", ++serial); /* never a duplicate */
    CHECK_OK(rm_open_options_init(&oo));
    CHECK_OK(rm_learn_options_init(&lo));
    CHECK_OK(rm_recall_options_init(&ro));
    CHECK_OK(rm_perception_options_init(&po));
    switch (s) {
    case OPEN_PATH:
    case OPEN_DEFAULT_COLLECTION:
        oo.path = scratch_open_path;
        *(s == OPEN_PATH ? &oo.path : &oo.default_collection) = v;
        st = rm_open(&oo, &db);
        if (st == RM_OK) CHECK_OK(rm_close(db));
        return st;
    case OPEN_MODEL_DIR:
    case OPEN_ORT_LIBRARY:
        oo.path = scratch_open_path;
        if (s == OPEN_MODEL_DIR) oo.model_dir = v;
        else oo.ort_library = v;
        st = rm_open(&oo, &db);
        CHECK((st == RM_OK) == (db != NULL));
        if (st == RM_OK) {
            rm_embedding_info *info = NULL;
            CHECK_OK(rm_embedding_status(db, &info));
            CHECK(info->state == RM_EMBED_UNAVAILABLE && info->reason[0] != '\0');
            rm_embedding_info_free(info);
            CHECK_OK(rm_close(db));
        }
        return st;
    case BATCH_INSIGHT:
    case BATCH_CONTEXT:
    case BATCH_COLLECTION:
        /* items[0] is valid: a failing items[1] must fail the call and store neither. */
        snprintf(first, sizeof first, "batch companion text number %d", serial);
        items[0].insight = first;
        items[0].opts = NULL;
        items[1].insight = s == BATCH_INSIGHT ? v : text;
        items[1].opts = &lo;
        if (s == BATCH_CONTEXT) lo.context = v;
        if (s == BATCH_COLLECTION) lo.collection = v;
        st = rm_learn_batch(fx->db, items, 2, &batch);
        CHECK((st == RM_OK) == (batch != NULL));
        if (st == RM_OK) CHECK(batch->count == 2 && !batch->results[0].duplicate);
        else if (strncmp(rm_last_error(), "items[1]: ", 10) != 0) { /* the failing item's index */
            fprintf(stderr, "%s: rm_last_error() does not start with \"items[1]: \": \"%.200s\"\n", SLOTS[s].name,
                    rm_last_error());
            exit(1);
        }
        rm_learn_batch_result_free(batch);
        return st;
    case LEARN_INSIGHT: return rm_learn(fx->db, v, NULL, NULL);
    case LEARN_CONTEXT: lo.context = v; return rm_learn(fx->db, text, &lo, NULL);
    case LEARN_COLLECTION: lo.collection = v; return rm_learn(fx->db, text, &lo, NULL);
    case LEARN_SESSION: lo.session_id = v; return rm_learn(fx->db, text, &lo, NULL);
    case RECALL_QUERY:
    case RECALL_COLLECTION:
    case RECALL_SESSION:
    case RECALL_FILTER:
    case RECALL_SPATIAL:
        if (s == RECALL_COLLECTION) ro.collection = v;
        if (s == RECALL_SESSION) ro.session_id = v;
        if (s == RECALL_FILTER) ro.context_filter = v;
        if (s == RECALL_SPATIAL) ro.spatial_sort = v;
        st = rm_recall(fx->db, s == RECALL_QUERY ? v : "gripper", &ro, &rr);
        CHECK((st == RM_OK) == (rr != NULL)); /* outputs are written only on success */
        rm_recall_result_free(rr);
        return st;
    case PERC_DESCRIPTION: return rm_save_perception(fx->db, v, &po, NULL);
    case PERC_METADATA: po.metadata = v; return rm_save_perception(fx->db, text, &po, NULL);
    case PERC_CONTEXT: po.context = v; return rm_save_perception(fx->db, text, &po, NULL);
    case PERC_COLLECTION: po.collection = v; return rm_save_perception(fx->db, text, &po, NULL);
    case PERC_SESSION: po.session_id = v; return rm_save_perception(fx->db, text, &po, NULL);
    case FORGET_REASON: /* on the scratch db, forget a fresh memory each time */
        if (fx == &scratch_fx) {
            rm_learn_result *l = NULL;
            CHECK_OK(rm_learn(fx->db, text, NULL, &l));
            st = rm_forget(fx->db, l->memory_id, v, NULL);
            rm_learn_result_free(l);
            return st;
        }
        return rm_forget(fx->db, fx->id, v, NULL);
    case UPDATE_CONTENT: return rm_update(fx->db, fx->id, v, NULL, NULL);
    case UPDATE_CONTEXT: return rm_update(fx->db, fx->id, text, v, NULL);
    case SESSION_COLLECTION:
    case SESSION_CONTEXT:
        st = rm_start_session(fx->db, s == SESSION_COLLECTION ? v : NULL, s == SESSION_CONTEXT ? v : NULL, &sess);
        CHECK((st == RM_OK) == (sess != NULL));
        rm_session_free(sess);
        return st;
    case END_SESSION_ID: return rm_end_session(fx->db, v, NULL, NULL);
    default: break;
    }
    CHECK(!"unknown slot");
    return RM_INTERNAL;
}

/* Runs a slot with a value; expected failures run on the main database. */
static void expect_slot(enum slot s, const char *v, rm_status want, const char *what) {
    rm_status got = call_slot(want == RM_OK ? &scratch_fx : &main_fx, s, v);
    if (got != want) {
        char err[300];
        snprintf(err, sizeof err, "%.299s", rm_last_error());
        fprintf(stderr, "%s = %s: got %s, expected %s\n  rm_last_error(): \"%s\"\n", SLOTS[s].name, what,
                rm_status_str(got), rm_status_str(want), err);
        exit(1);
    }
    if (want != RM_OK) CHECK(rm_last_error()[0] != '\0'); /* every failure is explained */
}

static char *repeat(char c, size_t n, const char *prefix) {
    size_t p = strlen(prefix);
    char *s = malloc(p + n + 1);
    CHECK(s != NULL);
    memcpy(s, prefix, p);
    memset(s + p, c, n);
    s[p + n] = '\0';
    return s;
}

static void test_every_string_argument(void) {
    static const char *const bad_utf8[] = {
        "\xff\xfe", "grip\xc3", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong", "{\"task\": \"\xff\"}"};
    char *big = repeat('a', BIG, "");
    int s;
    size_t i;
    for (s = 0; s < SLOT_COUNT; s++) {
        expect_slot((enum slot)s, NULL, SLOTS[s].null_, "NULL");
        expect_slot((enum slot)s, "", SLOTS[s].empty, "\"\"");
        expect_slot((enum slot)s, " \t\n ", SLOTS[s].blank, "blank");
        expect_slot((enum slot)s, big, SLOTS[s].big, "10 MB string");
        for (i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++)
            expect_slot((enum slot)s, bad_utf8[i], RM_INVALID_ARGUMENT, "invalid UTF-8");
    }
    free(big);
}

/* Documented limits, counted in characters (not bytes): at the limit the call
 * gets past validation, one character more is RM_INVALID_ARGUMENT. */
/* A NULL entry in a tags array is named by its index, also inside a batch item. */
static void test_null_tag_entry(void) {
    const char *tags[] = {"fine", NULL};
    rm_learn_options lo = {0};
    rm_learn_item items[2] = {{"first item", NULL}, {"second item", &lo}};
    lo.tags = tags;
    lo.tag_count = 2;
    CHECK(rm_learn(main_fx.db, "tagged text", &lo, NULL) == RM_INVALID_ARGUMENT);
    CHECK(strcmp(rm_last_error(), "tags[1] is NULL") == 0);
    CHECK(rm_learn_batch(main_fx.db, items, 2, NULL) == RM_INVALID_ARGUMENT);
    CHECK(strcmp(rm_last_error(), "items[1]: tags[1] is NULL") == 0);
}

static void test_limits(void) {
    static const struct { enum slot s; const char *unit; size_t max; rm_status at_max; } LIMITS[] = {
        {LEARN_INSIGHT, "x", RM_MAX_CONTENT_CHARS, RM_OK},
        {LEARN_INSIGHT, "\xe6\x8a\x93", RM_MAX_CONTENT_CHARS, RM_OK}, /* U+6293, 3 bytes */
        {BATCH_INSIGHT, "b", RM_MAX_CONTENT_CHARS, RM_OK},
        {BATCH_INSIGHT, "\xe6\x8a\x93", RM_MAX_CONTENT_CHARS, RM_OK},
        {BATCH_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {BATCH_CONTEXT, "t", RM_MAX_CONTEXT_BYTES, RM_OK},
        {UPDATE_CONTENT, "u", RM_MAX_CONTENT_CHARS, RM_OK},
        {PERC_DESCRIPTION, "d", RM_MAX_CONTENT_CHARS, RM_OK},
        {RECALL_QUERY, "q", RM_MAX_QUERY_CHARS, RM_OK},
        {RECALL_QUERY, "\xe6\x8a\x93", RM_MAX_QUERY_CHARS, RM_OK},
        {FORGET_REASON, "r", RM_MAX_REASON_CHARS, RM_OK},
        {OPEN_DEFAULT_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {LEARN_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {RECALL_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {SESSION_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {PERC_COLLECTION, "c", RM_MAX_NAME_CHARS, RM_OK},
        {LEARN_SESSION, "s", RM_MAX_NAME_CHARS, RM_NOT_FOUND}, /* valid, unknown */
        {END_SESSION_ID, "s", RM_MAX_NAME_CHARS, RM_NOT_FOUND},
        {LEARN_CONTEXT, "t", RM_MAX_CONTEXT_BYTES, RM_OK},       /* free text, bytes */
        {SESSION_CONTEXT, "t", RM_MAX_CONTEXT_BYTES, RM_OK},
    };
    size_t i, k;
    for (i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++) {
        size_t u = strlen(LIMITS[i].unit);
        char *v = malloc(u * (LIMITS[i].max + 1) + 1);
        CHECK(v != NULL);
        for (k = 0; k <= LIMITS[i].max; k++) memcpy(v + k * u, LIMITS[i].unit, u);
        v[u * (LIMITS[i].max + 1)] = '\0';
        expect_slot(LIMITS[i].s, v, RM_INVALID_ARGUMENT, "one over the limit");
        v[u * LIMITS[i].max] = '\0';
        expect_slot(LIMITS[i].s, v, LIMITS[i].at_max, "at the limit");
        free(v);
    }
    /* Collection names are checked wherever they come from. */
    expect_slot(OPEN_DEFAULT_COLLECTION, "line\nbreak", RM_INVALID_ARGUMENT, "control character");
    expect_slot(LEARN_COLLECTION, "line\nbreak", RM_INVALID_ARGUMENT, "control character");
    /* Descriptions need RM_MIN_DESCRIPTION_CHARS after trimming. */
    expect_slot(PERC_DESCRIPTION, "abcd", RM_INVALID_ARGUMENT, "4 characters");
    expect_slot(PERC_DESCRIPTION, "   abcd \n", RM_INVALID_ARGUMENT, "4 characters, padded");
    expect_slot(PERC_DESCRIPTION, "abcde", RM_OK, "5 characters");
}

static void test_malformed_json(void) {
    static const enum slot contexts[] = {LEARN_CONTEXT, PERC_CONTEXT, UPDATE_CONTEXT, SESSION_CONTEXT, BATCH_CONTEXT};
    static const char *const broken[] = {"{", "{\"a\": 1,", "{not json}", "{\"a\": }", "[1, 2", "{\"a\": 1}}"};
    static const char *const not_objects[] = {"[1, 2]", "null", "42", "\"text\"", "true"};
    static const char *const bad_filters[] = {
        "{\"a\": {\"$regex\": \"x\"}}", "{\"a\": {\"$in\": [1]}}", "{\"a\": {\"$lt\": 1, \"$bogus\": 2}}",
        "{\"\": 1}", "{\"a..b\": 1}", "{\"a.\": 1}",
        "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k10\":10}"};
    static const char *const bad_spatial[] = {
        "{\"target\": [0, 0, 0]}", "{\"field\": \"spatial.pos\"}", "{\"field\": 3, \"target\": [0]}",
        "{\"field\": \"spatial.pos\", \"target\": \"0,0,0\"}", "{\"field\": \"spatial.pos\", \"target\": []}",
        "{\"field\": \"spatial.pos\", \"target\": [0, \"x\"]}", "{\"field\": \"p\", \"target\": [1e999]}",
        "{\"field\": \"spatial.pos\", \"target\": [0], \"max_distance\": -1}",
        "{\"field\": \"spatial.pos\", \"target\": [0], \"max_distance\": \"far\"}",
        "{\"field\": \"spatial.pos\", \"target\": [0], \"colour\": 1}", "{\"field\": \"\", \"target\": [0]}"};
    const char *ten = "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9}";
    size_t i, c;
    for (c = 0; c < sizeof contexts / sizeof contexts[0]; c++)
        for (i = 0; i < sizeof broken / sizeof broken[0]; i++)
            expect_slot(contexts[c], broken[i], RM_INVALID_ARGUMENT, broken[i]);
    for (i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        expect_slot(RECALL_FILTER, broken[i], RM_INVALID_ARGUMENT, broken[i]);
        expect_slot(RECALL_SPATIAL, broken[i], RM_INVALID_ARGUMENT, broken[i]);
        expect_slot(PERC_METADATA, broken[i], RM_INVALID_ARGUMENT, broken[i]);
    }
    for (i = 0; i < sizeof not_objects / sizeof not_objects[0]; i++) {
        expect_slot(RECALL_FILTER, not_objects[i], RM_INVALID_ARGUMENT, not_objects[i]);
        expect_slot(RECALL_SPATIAL, not_objects[i], RM_INVALID_ARGUMENT, not_objects[i]);
    }
    for (i = 0; i < sizeof bad_filters / sizeof bad_filters[0]; i++)
        expect_slot(RECALL_FILTER, bad_filters[i], RM_INVALID_ARGUMENT, bad_filters[i]);
    for (i = 0; i < sizeof bad_spatial / sizeof bad_spatial[0]; i++)
        expect_slot(RECALL_SPATIAL, bad_spatial[i], RM_INVALID_ARGUMENT, bad_spatial[i]);
    expect_slot(RECALL_FILTER, ten, RM_OK, "10 conditions");
    expect_slot(RECALL_FILTER, "{}", RM_OK, "no condition");
}

/* prefix + depth '[' (+ depth ']' and suffix when balanced). */
static char *nested(const char *prefix, size_t depth, int balanced, const char *suffix) {
    size_t p = strlen(prefix), q = strlen(suffix);
    char *s = malloc(p + 2 * depth + q + 1), *end;
    CHECK(s != NULL);
    memcpy(s, prefix, p);
    memset(s + p, '[', depth);
    end = s + p + depth;
    if (balanced) {
        memset(end, ']', depth);
        memcpy(end + depth, suffix, q);
        end += depth + q;
    }
    *end = '\0';
    return s;
}

/* Deeply nested JSON, over and under the size limits: rejected (parser depth
 * limit), never a stack overflow. */
static void test_deep_json(void) {
    static const size_t depths[] = {100000, 20000, 5000, 1000};
    static const enum slot json_slots[] = {
        LEARN_CONTEXT, PERC_CONTEXT, UPDATE_CONTEXT, SESSION_CONTEXT, PERC_METADATA, RECALL_FILTER, RECALL_SPATIAL,
        BATCH_CONTEXT};
    size_t d, k;
    int balanced;
    for (d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        for (balanced = 0; balanced < 2; balanced++) {
            char *arrays = nested("", depths[d], balanced, "");
            char *in_object = nested("{\"a\": ", depths[d], balanced, "}");
            for (k = 0; k < sizeof json_slots / sizeof json_slots[0]; k++) {
                expect_slot(json_slots[k], arrays, RM_INVALID_ARGUMENT, "deeply nested [[[");
                expect_slot(json_slots[k], in_object, RM_INVALID_ARGUMENT, "{\"a\": [[[");
            }
            free(arrays);
            free(in_object);
        }
    }
}

/* Opens scratch_open_path with `oo`; requires `want`, and without a model a handle
 * that runs BM25 only and says why. */
static void expect_open(rm_open_options *oo, rm_status want, const char *what) {
    rm_db *db = NULL;
    rm_status got;
    oo->path = scratch_open_path;
    got = rm_open(oo, &db);
    if (got != want) {
        fprintf(stderr, "rm_open with %s: got %s, expected %s\n  rm_last_error(): \"%.300s\"\n", what,
                rm_status_str(got), rm_status_str(want), rm_last_error());
        exit(1);
    }
    CHECK((got == RM_OK) == (db != NULL));
    if (got != RM_OK) {
        CHECK(rm_last_error()[0] != '\0');
        return;
    }
    {
        rm_embedding_info *info = NULL;
        rm_recall_result *r = NULL;
        rm_learn_result *l = NULL;
        rm_learn_item item;
        rm_learn_batch_result *batch = NULL;
        rm_reembed_result rr;
        char text[96];
        CHECK_OK(rm_embedding_status(db, &info));
        CHECK(info->state == RM_EMBED_UNAVAILABLE && info->reason[0] != '\0');
        CHECK(info->model == NULL && info->dim == 0 && info->kernel != NULL && info->kernel[0] != '\0');
        rm_embedding_info_free(info);
        serial++;
        snprintf(text, sizeof text, "open options check %d: the gripper needs %d N", serial, serial);
        CHECK_OK(rm_learn(db, text, NULL, &l));
        CHECK(!l->duplicate && !l->has_embedding);
        rm_learn_result_free(l);
        serial++;
        snprintf(text, sizeof text, "open options check %d: the batch gripper needs %d N", serial, serial);
        item.insight = text;
        item.opts = NULL;
        CHECK_OK(rm_learn_batch(db, &item, 1, &batch));
        CHECK(batch->count == 1 && !batch->results[0].duplicate && !batch->results[0].has_embedding);
        rm_learn_batch_result_free(batch);
        CHECK_OK(rm_recall(db, "gripper needs", NULL, &r));
        CHECK(r->count > 0 && r->mode == RM_MODE_BM25_ONLY);
        rm_recall_result_free(r);
        CHECK_STATUS(rm_reembed(db, 0, &rr), RM_EMBEDDING_UNAVAILABLE);
        CHECK_OK(rm_close(db));
    }
}

/* The embedding fields of rm_open_options are range-checked whether or not a
 * model is configured; a model that cannot be loaded does not fail rm_open. */
static void test_embedding_options(void) {
    const struct { uint32_t threads, batch; double cosine; rm_status want; const char *what; } cases[] = {
        {0, 32, 0.85, INV, "embed_threads 0"},
        {65, 32, 0.85, INV, "embed_threads 65"},
        {UINT32_MAX, 32, 0.85, INV, "embed_threads UINT32_MAX"},
        {2, 0, 0.85, INV, "embed_batch 0"},
        {2, 1025, 0.85, INV, "embed_batch 1025"},
        {2, UINT32_MAX, 0.85, INV, "embed_batch UINT32_MAX"},
        {2, 32, NAN, INV, "cosine_dedup NaN"},
        {2, 32, INFINITY, INV, "cosine_dedup +inf"},
        {2, 32, -INFINITY, INV, "cosine_dedup -inf"},
        {2, 32, -0.01, INV, "cosine_dedup -0.01"},
        {1, 1, 0.0, OK, "embed_threads 1, embed_batch 1, cosine_dedup 0"},
        {64, 1024, 1.0, OK, "embed_threads 64, embed_batch 1024, cosine_dedup 1"},
        {2, 32, 2.0, OK, "cosine_dedup 2 (cosine layer off)"},
    };
    char missing_dir[400];
    rm_open_options oo;
    rm_db *db = NULL;
    size_t i;
    int with_model;
    snprintf(missing_dir, sizeof missing_dir, "%s.no-such-model-dir", scratch_open_path);

    for (with_model = 0; with_model < 2; with_model++) {
        for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            CHECK_OK(rm_open_options_init(&oo));
            oo.durability = RM_DURABILITY_NORMAL;
            /* embeddings=false, or on with a model directory that does not exist */
            oo.embeddings = with_model != 0;
            oo.model_dir = with_model ? missing_dir : NULL;
            oo.embed_threads = cases[i].threads;
            oo.embed_batch = cases[i].batch;
            oo.cosine_dedup = cases[i].cosine;
            expect_open(&oo, cases[i].want, cases[i].what);
        }
    }
    /* The defaults, and paths that lead nowhere: BM25 only, never an open failure. */
    CHECK_OK(rm_open_options_init(&oo));
    expect_open(&oo, RM_OK, "defaults (no model configured)");
    oo.embeddings = false;
    oo.model_dir = missing_dir;
    expect_open(&oo, RM_OK, "embeddings=false and a model_dir");
    oo.embeddings = true;
    expect_open(&oo, RM_OK, "a model_dir that does not exist");
    oo.ort_library = missing_dir;
    expect_open(&oo, RM_OK, "an ort_library that does not exist");
    oo.ort_library = scratch_open_path; /* exists, but is no shared library */
    expect_open(&oo, RM_OK, "an ort_library that is not a shared library");

    /* Invalid UTF-8 in the paths is an argument error naming the field. */
    CHECK_OK(rm_open_options_init(&oo));
    oo.path = scratch_open_path;
    oo.model_dir = "/tmp/\xff\xfe-model";
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "model_dir") != NULL);
    oo.model_dir = NULL;
    oo.ort_library = "/tmp/libonnxruntime\xc3.so";
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    CHECK(strstr(rm_last_error(), "ort_library") != NULL);
    CHECK(db == NULL);
}

static void test_numbers_and_enums(void) {
    static const int32_t ns[] = {0, -5, 1000000, INT32_MIN, INT32_MAX};
    static const int64_t bad_ids[] = {0, -1, INT64_MIN};
    const double bad_scores[] = {NAN, INFINITY, -INFINITY, -0.01, 1.01};
    rm_recall_options ro;
    rm_recall_result *r = NULL;
    rm_memory_result *m = NULL;
    rm_perception_options po;
    rm_open_options oo;
    rm_session *s = NULL;
    rm_db *db = NULL;
    size_t i, total = test_count(main_fx.db);

    CHECK_OK(rm_recall_options_init(&ro));
    for (i = 0; i < sizeof bad_scores / sizeof bad_scores[0]; i++) {
        ro.min_confidence = bad_scores[i];
        CHECK_STATUS(rm_recall(main_fx.db, "gripper", &ro, &r), RM_INVALID_ARGUMENT);
        CHECK(r == NULL);
    }
    ro.min_confidence = 0.0;
    for (i = 0; i < sizeof ns / sizeof ns[0]; i++) { /* n is clamped to 1..100 */
        ro.n = ns[i];
        CHECK_OK(rm_recall(main_fx.db, "*", &ro, &r));
        CHECK(r->count == (ns[i] < 1 ? 1 : total));
        rm_recall_result_free(r);
    }

    for (i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        CHECK_STATUS(rm_get_memory(main_fx.db, bad_ids[i], &m), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_forget(main_fx.db, bad_ids[i], "bad id", NULL), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_update(main_fx.db, bad_ids[i], "bad id", NULL, NULL), RM_INVALID_ARGUMENT);
    }
    CHECK_STATUS(rm_get_memory(main_fx.db, INT64_MAX, &m), RM_NOT_FOUND);
    CHECK_STATUS(rm_forget(main_fx.db, INT64_MAX, "no such memory", NULL), RM_NOT_FOUND);
    CHECK_STATUS(rm_update(main_fx.db, INT64_MAX, "no such memory", NULL, NULL), RM_NOT_FOUND);
    CHECK(m == NULL);

    /* Out-of-range enum values are rejected, not undefined behaviour. */
    CHECK_OK(rm_perception_options_init(&po));
    po.perception_type = 99;
    CHECK_STATUS(rm_save_perception(main_fx.db, "tactile burst sample", &po, NULL), RM_INVALID_ARGUMENT);
    po.perception_type = -1;
    CHECK_STATUS(rm_save_perception(main_fx.db, "tactile burst sample", &po, NULL), RM_INVALID_ARGUMENT);
    po.perception_type = RM_PERCEPTION_NONE;
    CHECK_STATUS(rm_save_perception(main_fx.db, "tactile burst sample", &po, NULL), RM_INVALID_ARGUMENT);
    po.perception_type = RM_PERCEPTION_TACTILE;
    po.data_len = 5; /* data NULL with a length */
    CHECK_STATUS(rm_save_perception(main_fx.db, "tactile burst sample", &po, NULL), RM_INVALID_ARGUMENT);
    po.data = (const uint8_t *)calloc(1, RM_MAX_PERCEPTION_DATA + 1);
    CHECK(po.data != NULL);
    po.data_len = RM_MAX_PERCEPTION_DATA + 1;
    CHECK_STATUS(rm_save_perception(main_fx.db, "tactile burst sample", &po, NULL), RM_INVALID_ARGUMENT);
    free((void *)po.data);

    CHECK_OK(rm_open_options_init(&oo));
    oo.path = scratch_open_path;
    oo.durability = 7;
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    oo.durability = -1;
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    oo.durability = RM_DURABILITY_NORMAL;
    oo.rrf_k = NAN;
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    oo.rrf_k = 60.0;
    oo.decay_rate = 2.0;
    CHECK_STATUS(rm_open(&oo, &db), RM_INVALID_ARGUMENT);
    CHECK(db == NULL);
    test_embedding_options();

    /* Outcome scores outside 0..1 (checked on a real session of the scratch db). */
    CHECK_OK(rm_start_session(scratch_fx.db, NULL, NULL, &s));
    for (i = 0; i < sizeof bad_scores / sizeof bad_scores[0]; i++)
        CHECK_STATUS(rm_end_session(scratch_fx.db, s->session_id, &bad_scores[i], NULL), RM_INVALID_ARGUMENT);
    CHECK_OK(rm_end_session(scratch_fx.db, s->session_id, NULL, NULL));
    rm_session_free(s);
}

/* Each *_json function: NULL result, and a real result with a NULL out_json. */
#define CHECK_JSON_NULLS(json_fn, result)                                \
    do {                                                                 \
        char *json_ = NULL;                                              \
        CHECK_STATUS(json_fn(NULL, &json_), RM_INVALID_ARGUMENT);        \
        CHECK_STATUS(json_fn(result, NULL), RM_INVALID_ARGUMENT);        \
        CHECK(json_ == NULL);                                            \
    } while (0)

static void test_json_null_pointers(void) {
    rm_db *db = scratch_fx.db;
    rm_learn_result *l = NULL;
    rm_recall_result *r = NULL;
    rm_memory_result *m = NULL;
    rm_perception_result *p = NULL;
    rm_forget_result *f = NULL;
    rm_update_result *u = NULL;
    rm_session *s = NULL;
    rm_session_summary *sum = NULL;
    rm_embedding_info *info = NULL;
    rm_learn_batch_result *batch = NULL;
    rm_learn_item item;
    item.insight = "json null check: a batch of one";
    item.opts = NULL;
    CHECK_OK(rm_embedding_status(db, &info));
    CHECK_OK(rm_learn_batch(db, &item, 1, &batch));
    CHECK_JSON_NULLS(rm_embedding_info_json, info);
    CHECK_JSON_NULLS(rm_learn_batch_result_json, batch);
    rm_embedding_info_free(info);
    rm_learn_batch_result_free(batch);
    CHECK_OK(rm_learn(db, "json null check: wrist camera needs 2 seconds to focus", NULL, &l));
    CHECK_OK(rm_recall(db, "wrist camera", NULL, &r));
    CHECK_OK(rm_get_memory(db, l->memory_id, &m));
    CHECK_OK(rm_save_perception(db, "json null check: wrist camera frame", NULL, &p));
    CHECK_OK(rm_update(db, l->memory_id, "json null check: wrist camera needs 3 seconds", NULL, &u));
    CHECK_OK(rm_forget(db, l->memory_id, "json null check", &f));
    CHECK_OK(rm_start_session(db, NULL, NULL, &s));
    CHECK_OK(rm_end_session(db, s->session_id, NULL, &sum));
    CHECK_JSON_NULLS(rm_learn_result_json, l);
    CHECK_JSON_NULLS(rm_recall_result_json, r);
    CHECK_JSON_NULLS(rm_memory_result_json, m);
    CHECK_JSON_NULLS(rm_perception_result_json, p);
    CHECK_JSON_NULLS(rm_forget_result_json, f);
    CHECK_JSON_NULLS(rm_update_result_json, u);
    CHECK_JSON_NULLS(rm_session_json, s);
    CHECK_JSON_NULLS(rm_session_summary_json, sum);
    rm_learn_result_free(l);
    rm_recall_result_free(r);
    rm_memory_result_free(m);
    rm_perception_result_free(p);
    rm_forget_result_free(f);
    rm_update_result_free(u);
    rm_session_free(s);
    rm_session_summary_free(sum);
}

/* NULL for each pointer that is not a string slot; *_free(NULL) are no-ops. */
static void test_null_pointers(void) {
    rm_open_options oo;
    rm_recall_result *r = NULL;
    rm_session *s = NULL;
    rm_memory_result *m = NULL;
    rm_db *db = main_fx.db;

    CHECK_STATUS(rm_open_options_init(NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_learn_options_init(NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_recall_options_init(NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_perception_options_init(NULL), RM_INVALID_ARGUMENT);
    CHECK_OK(rm_open_options_init(&oo));
    oo.path = scratch_open_path;
    CHECK_STATUS(rm_open(&oo, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_open(NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_flush(NULL), RM_INVALID_ARGUMENT);
    CHECK_OK(rm_close(NULL));

    CHECK_STATUS(rm_learn(NULL, "gripper slipped at 3N", NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_recall(NULL, "gripper", NULL, &r), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_recall(db, "gripper", NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_save_perception(NULL, "tactile burst sample", NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_get_memory(NULL, main_fx.id, &m), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_get_memory(db, main_fx.id, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_forget(NULL, main_fx.id, "reason", NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_update(NULL, main_fx.id, "new content", NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_start_session(NULL, NULL, NULL, &s), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_start_session(db, NULL, NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_end_session(NULL, "00000000-0000-4000-8000-000000000000", NULL, NULL), RM_INVALID_ARGUMENT);
    CHECK(r == NULL && s == NULL && m == NULL);

    /* Embedding functions. */
    {
        rm_embedding_info *info = NULL;
        rm_learn_batch_result *batch = NULL;
        rm_reembed_result rr;
        rm_learn_item item;
        item.insight = "gripper slipped at 3N";
        item.opts = NULL;
        rr.embedded = rr.remaining = -3;
        rr.rebuilt = true;
        CHECK_STATUS(rm_embedding_status(NULL, &info), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_embedding_status(db, NULL), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_embedding_status(NULL, NULL), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_reembed(NULL, 0, &rr), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_reembed(NULL, 0, NULL), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_learn_batch(NULL, &item, 1, &batch), RM_INVALID_ARGUMENT);
        CHECK_STATUS(rm_learn_batch(db, NULL, 1, &batch), RM_INVALID_ARGUMENT);
        CHECK(strstr(rm_last_error(), "items") != NULL);
        CHECK_STATUS(rm_learn_batch(db, NULL, RM_MAX_BATCH + 1, &batch), RM_INVALID_ARGUMENT);
        CHECK(info == NULL && batch == NULL && rr.embedded == -3 && rr.remaining == -3 && rr.rebuilt);
        /* No model on this handle: reembed says so; a NULL out is not the error. */
        CHECK_STATUS(rm_reembed(db, 0, NULL), RM_EMBEDDING_UNAVAILABLE);
        CHECK(rm_last_error()[0] != '\0');
        CHECK_STATUS(rm_reembed(db, 10, &rr), RM_EMBEDDING_UNAVAILABLE);
        CHECK(rr.embedded == -3 && rr.remaining == -3 && rr.rebuilt); /* outputs only on RM_OK */
        /* An empty batch: NULL items with count 0 is fine, and stores nothing. */
        CHECK_OK(rm_learn_batch(scratch_fx.db, NULL, 0, &batch));
        CHECK(batch != NULL && batch->count == 0);
        rm_learn_batch_result_free(batch);
        CHECK_OK(rm_learn_batch(scratch_fx.db, NULL, 0, NULL));
        CHECK_OK(rm_learn_batch(scratch_fx.db, &item, 1, NULL)); /* out may be NULL */
    }

    /* NULL options and NULL out pointers where the header allows them. */
    CHECK_OK(rm_recall(scratch_fx.db, "gripper", NULL, &r));
    rm_recall_result_free(r);
    CHECK_OK(rm_learn(scratch_fx.db, "gripper slipped at 3N on the wet bottle", NULL, NULL));
    CHECK_OK(rm_save_perception(scratch_fx.db, "camera frame of the wet bottle", NULL, NULL));

    test_json_null_pointers();

    rm_string_free(NULL);
    rm_embedding_info_free(NULL);
    rm_learn_batch_result_free(NULL);
    rm_learn_result_free(NULL);
    rm_recall_result_free(NULL);
    rm_memory_result_free(NULL);
    rm_perception_result_free(NULL);
    rm_forget_result_free(NULL);
    rm_update_result_free(NULL);
    rm_session_free(NULL);
    rm_session_summary_free(NULL);
}

/* A closed handle, and a pointer that was never a handle, are never dereferenced. */
static void test_closed_handles(void) {
    int not_a_handle = 0;
    rm_db *handles[2];
    rm_recall_result *r = NULL;
    rm_memory_result *m = NULL;
    rm_session *s = NULL;
    rm_embedding_info *info = NULL;
    rm_learn_batch_result *batch = NULL;
    rm_learn_item item;
    double score = 0.5;
    size_t i;
    item.insight = "closed handle batch item";
    item.opts = NULL;
    handles[0] = test_open(scratch_open_path);
    CHECK_OK(rm_close(handles[0]));
    CHECK_STATUS(rm_close(handles[0]), RM_CLOSED); /* double close */
    handles[1] = (rm_db *)&not_a_handle;
    for (i = 0; i < 2; i++) {
        rm_db *db = handles[i];
        CHECK_STATUS(rm_flush(db), RM_CLOSED);
        CHECK_STATUS(rm_learn(db, "closed handle insight", NULL, NULL), RM_CLOSED);
        CHECK_STATUS(rm_recall(db, "gripper", NULL, &r), RM_CLOSED);
        CHECK_STATUS(rm_save_perception(db, "closed handle frame", NULL, NULL), RM_CLOSED);
        CHECK_STATUS(rm_get_memory(db, 1, &m), RM_CLOSED);
        CHECK_STATUS(rm_forget(db, 1, "closed", NULL), RM_CLOSED);
        CHECK_STATUS(rm_update(db, 1, "closed handle update", NULL, NULL), RM_CLOSED);
        CHECK_STATUS(rm_start_session(db, NULL, NULL, &s), RM_CLOSED);
        CHECK_STATUS(rm_end_session(db, "00000000-0000-4000-8000-000000000000", &score, NULL), RM_CLOSED);
        CHECK_STATUS(rm_embedding_status(db, &info), RM_CLOSED);
        CHECK_STATUS(rm_reembed(db, 0, NULL), RM_CLOSED);
        CHECK_STATUS(rm_learn_batch(db, &item, 1, &batch), RM_CLOSED);
        CHECK_STATUS(rm_close(db), RM_CLOSED);
    }
    CHECK(r == NULL && m == NULL && s == NULL && info == NULL && batch == NULL);
}

/* Snapshot of the main database: every active memory's id and content. */
typedef struct { size_t count; int64_t ids[100]; char content[100][128]; } snapshot;

static void take_snapshot(rm_db *db, snapshot *snap) {
    rm_recall_result *r = test_recall(db, "*", 100);
    size_t i;
    snap->count = r->count;
    for (i = 0; i < r->count; i++) {
        snap->ids[i] = r->hits[i].memory.id;
        snprintf(snap->content[i], sizeof snap->content[i], "%s", r->hits[i].memory.content);
    }
    rm_recall_result_free(r);
}

int main(void) {
    test_db_path main_path, scratch_path;
    snapshot before, after;
    rm_db *home_db = NULL;
    size_t i;

    test_db_path_init(&main_path, "main");
    test_db_path_init(&scratch_path, "scratch");
    snprintf(scratch_open_path, sizeof scratch_open_path, "%s/opened.db", scratch_path.dir);
    /* No model from the environment: every handle here runs BM25 only. */
    CHECK(unsetenv("ROBOTMEM_MODEL_DIR") == 0 && unsetenv("ROBOTMEM_ORT_LIBRARY") == 0);
    /* NULL path means ~/.robotmem/memory.db: point HOME at the scratch directory. */
    CHECK(setenv("HOME", scratch_path.dir, 1) == 0);
    CHECK(chdir(scratch_path.dir) == 0); /* a relative path may only land here */
    CHECK_OK(rm_open(NULL, &home_db));
    CHECK_OK(rm_close(home_db));

    main_fx.db = test_open(main_path.path);
    main_fx.id = test_learn(main_fx.db, "gripper force 12N lifts the steel cup", "{\"task\": {\"success\": true}}");
    test_learn(main_fx.db, "gripper opening 8cm fits the mug handle", NULL);
    test_learn(main_fx.db, "夹爪力度12N可以抓起钢杯", NULL);
    scratch_fx.db = test_open(scratch_path.path);
    scratch_fx.id = test_learn(scratch_fx.db, "scratch memory to update 1", NULL);
    take_snapshot(main_fx.db, &before);
    CHECK(before.count == 3);

    test_null_pointers();
    test_every_string_argument();
    test_limits();
    test_null_tag_entry();
    test_malformed_json();
    test_deep_json();
    test_numbers_and_enums();
    test_closed_handles();

    /* Nothing above may have changed the main database, even after a reopen. */
    CHECK_OK(rm_close(main_fx.db));
    main_fx.db = test_open(main_path.path);
    take_snapshot(main_fx.db, &after);
    CHECK(after.count == before.count);
    for (i = 0; i < before.count; i++) {
        CHECK(after.ids[i] == before.ids[i]);
        CHECK_STREQ(after.content[i], before.content[i]);
    }
    CHECK_OK(rm_close(main_fx.db));
    CHECK_OK(rm_close(scratch_fx.db));
    for (i = 0; i < 5; i++) { /* files made through scratch_open_path and $HOME */
        static const char *const extra[] = {"opened.db", "opened.db-lock", ".robotmem/memory.db",
                                            ".robotmem/memory.db-lock", ".robotmem"};
        char f[400];
        snprintf(f, sizeof f, "%s/%s", scratch_path.dir, extra[i]);
        /* -wal/-shm are gone after a clean close; a -lock file only where a write ran */
        if (remove(f) != 0 && (i == 0 || i == 2 || i == 4)) {
            perror(f);
            return 1;
        }
    }
    test_db_path_remove(&scratch_path);
    test_db_path_remove(&main_path);
    puts("test_bad_input: OK");
    return 0;
}
