/*
 * robotmem quickstart: a robot remembers what worked, and recalls it later.
 *
 *   cmake -S . -B build && cmake --build build
 *   ./build/examples/quickstart [database-file]
 *
 * Without an argument the example uses /tmp/robotmem-quickstart.db and starts it
 * afresh on every run; a file given as argument must not exist yet.
 *
 * Every rm_ call returns a status; on failure rm_last_error() says why. Every
 * result the library returns is freed with its own rm_*_free() function.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "robotmem.h"

#define DEFAULT_DB "/tmp/robotmem-quickstart.db"

/* Runs an rm_ call; on failure prints why and jumps to the cleanup at `done`. */
#define TRY(call)                                        \
    do {                                                 \
        rm_status st_ = (call);                          \
        if (st_ != RM_OK) {                              \
            report_failure(#call, st_);                  \
            goto done;                                   \
        }                                                \
    } while (0)

static void report_failure(const char *call, rm_status status) {
    fprintf(stderr, "error: %s\n  -> %s: ", call, rm_status_str(status));
    fprintf(stderr, "%s\n", rm_last_error());
}

static void print_hits(const char *title, const rm_recall_result *r) {
    size_t i;
    static const char *const modes[] = {"hybrid", "bm25_only", "vec_only", "scan"};
    printf("\n%s: %zu hit(s), mode %s\n", title, r->count, modes[r->mode]);
    for (i = 0; i < r->count; i++) {
        const rm_hit *h = &r->hits[i];
        printf("  #%" PRId64 "  score %.2f  [%s]  %s", h->memory.id, h->score,
               h->memory.category, h->memory.content);
        if (h->has_distance && isfinite(h->distance)) printf("  (%.3f m away)", h->distance);
        printf("\n");
    }
}

/* A recall with the given filter / spatial sort (NULL: none). */
static rm_status recall(rm_db *db, const char *query, int n, const char *filter,
                        const char *spatial_sort, rm_recall_result **out) {
    rm_recall_options o;
    rm_status st = rm_recall_options_init(&o);
    if (st != RM_OK) return st;
    o.n = n;
    o.context_filter = filter;
    o.spatial_sort = spatial_sort;
    return rm_recall(db, query, &o, out);
}

/* Starts from an empty database: the default file is reset, a given one must be new. */
static int prepare_path(const char *path, int is_default) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-lock"};
    char file[1024];
    size_t i;
    FILE *f;
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        if (is_default) {
            remove(file);
        } else if ((f = fopen(file, "rb")) != NULL) {
            fclose(f);
            fprintf(stderr, "error: %s already exists; give a new file name\n", file);
            return 0;
        }
    }
    return 1;
}

/* Experiences of a pick-and-place robot: what it did and how it went. */
static const struct { const char *insight, *context; } experiences[] = {
    {"grip_force=12.5N holds the ceramic mug without slipping",
     "{\"params\": {\"grip_force\": {\"value\": 12.5, \"unit\": \"N\"}},"
     " \"spatial\": {\"object_position\": [0.42, -0.10, 0.05]},"
     " \"task\": {\"name\": \"pick_mug\", \"success\": true}}"},
    {"grip_force=20N cracked the paper cup, thin walls need less force",
     "{\"params\": {\"grip_force\": {\"value\": 20, \"unit\": \"N\"}},"
     " \"spatial\": {\"object_position\": [0.40, 0.15, 0.05]},"
     " \"task\": {\"name\": \"pick_cup\", \"success\": false}}"},
    {"approach the drawer handle from below at 5 cm/s",
     "{\"params\": {\"approach_speed\": {\"value\": 0.05, \"unit\": \"m/s\"}},"
     " \"spatial\": {\"object_position\": [0.80, 0.00, 0.35]},"
     " \"task\": {\"name\": \"open_drawer\", \"success\": true}}"},
    {"抓取玻璃杯时夹爪力度保持在8N以下，成功率最高",
     "{\"params\": {\"grip_force\": {\"value\": 8, \"unit\": \"N\"}},"
     " \"spatial\": {\"object_position\": [0.35, 0.05, 0.05]},"
     " \"task\": {\"name\": \"pick_glass\", \"success\": true}}"},
};

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : DEFAULT_DB;
    int ok = 0;
    size_t i;
    int64_t ids[sizeof experiences / sizeof experiences[0]];
    double outcome = 0.9;
    char *json = NULL;
    rm_open_options open_opts;
    rm_learn_options learn_opts;
    rm_perception_options perception_opts;
    rm_db *db = NULL;
    rm_session *session = NULL;
    rm_learn_result *learned = NULL;
    rm_perception_result *perception = NULL;
    rm_recall_result *hits = NULL;
    rm_update_result *updated = NULL;
    rm_forget_result *forgotten = NULL;
    rm_session_summary *summary = NULL;
    rm_memory_result *memory = NULL;
    rm_embedding_info *embedding = NULL;
    /* Tactile sensor frame: fingertip forces in newtons, stored byte for byte. */
    const char *tactile =
        "{\"fingertips\": [[1.2, 1.4, 1.1], [3.9, 4.2, 4.0]], \"unit\": \"N\", \"rate_hz\": 100}";

    if (!prepare_path(path, argc <= 1)) return 1;
    printf("robotmem %s, database %s\n", rm_version(), path);

    TRY(rm_open_options_init(&open_opts));
    open_opts.path = path;
    TRY(rm_open(&open_opts, &db));

    /* Vector search needs the embedding model and ONNX Runtime (model_dir /
       ort_library, or $ROBOTMEM_MODEL_DIR / $ROBOTMEM_ORT_LIBRARY); without them
       the handle runs BM25 only and says why. */
    TRY(rm_embedding_status(db, &embedding));
    if (embedding->state == RM_EMBED_READY)
        printf("embeddings: %s (%s kernel)\n", embedding->model, embedding->index_kernel);
    else
        printf("embeddings unavailable: %s\n", embedding->reason);
    rm_embedding_info_free(embedding);
    embedding = NULL;

    /* An episode groups what the robot learns during one task run. */
    TRY(rm_start_session(db, NULL, "{\"robot\": {\"id\": \"ur5e-01\"}, \"env\": {\"sim_or_real\": \"real\"}}",
                         &session));
    printf("session %s started\n", session->session_id);

    TRY(rm_learn_options_init(&learn_opts));
    learn_opts.session_id = session->session_id;
    for (i = 0; i < sizeof experiences / sizeof experiences[0]; i++) {
        learn_opts.context = experiences[i].context;
        TRY(rm_learn(db, experiences[i].insight, &learn_opts, &learned));
        ids[i] = learned->memory_id;
        printf("learned #%" PRId64 " [%s, confidence %.2f]%s %s\n", learned->memory_id,
               learned->category, learned->confidence, learned->duplicate ? " (already known)" : "",
               experiences[i].insight);
        rm_learn_result_free(learned);
        learned = NULL;
    }

    TRY(rm_perception_options_init(&perception_opts));
    perception_opts.perception_type = RM_PERCEPTION_TACTILE;
    perception_opts.data = (const uint8_t *)tactile;
    perception_opts.data_len = strlen(tactile);
    perception_opts.metadata = "{\"sensor\": \"fingertip_array\", \"unit\": \"N\", \"rate_hz\": 100}";
    perception_opts.session_id = session->session_id;
    TRY(rm_save_perception(db, "tactile force readings while lifting the ceramic mug", &perception_opts,
                           &perception));
    printf("saved tactile perception #%" PRId64 "\n", perception->memory_id);

    /* Plain recall: best match first, score 1.0 for the best. */
    TRY(recall(db, "grip force cup", 5, NULL, NULL, &hits));
    print_hits("recall \"grip force cup\"", hits);
    rm_recall_result_free(hits);
    hits = NULL;

    /* A paraphrase: few words in common, found by meaning when the model is loaded. */
    TRY(recall(db, "how hard should the hand squeeze a mug", 3, NULL, NULL, &hits));
    print_hits("recall \"how hard should the hand squeeze a mug\"", hits);
    rm_recall_result_free(hits);
    hits = NULL;

    /* Chinese text is segmented too. */
    TRY(recall(db, "抓取玻璃杯", 5, NULL, NULL, &hits));
    print_hits("recall \"抓取玻璃杯\"", hits);
    rm_recall_result_free(hits);
    hits = NULL;

    /* "*" lists memories by filter alone: what succeeded, nearest to the next object first. */
    TRY(recall(db, "*", 5, "{\"task.success\": true}",
               "{\"field\": \"spatial.object_position\", \"target\": [0.40, 0.00, 0.05]}", &hits));
    print_hits("successes nearest to (0.40, 0.00, 0.05)", hits);
    rm_recall_result_free(hits);
    hits = NULL;

    /* Any result can be rendered as JSON, e.g. for a ROS string topic or a log. */
    TRY(recall(db, "drawer handle", 1, NULL, NULL, &hits));
    TRY(rm_recall_result_json(hits, &json));
    printf("\nrecall \"drawer handle\" as JSON:\n%s\n", json);

    /* Correct an experience, then forget one that came from a bad sensor. */
    TRY(rm_update(db, ids[2], "approach the drawer handle from below at 3 cm/s, 5 cm/s overshoots", NULL,
                  &updated));
    printf("\nupdated #%" PRId64 ": \"%s\" -> \"%s\"\n", updated->memory_id, updated->old_content,
           updated->new_content);
    TRY(rm_forget(db, ids[1], "force sensor was miscalibrated during that run", &forgotten));
    printf("forgot #%" PRId64 ": \"%s\" (%s)\n", forgotten->memory_id, forgotten->content, forgotten->reason);

    /* End the episode with an outcome score; related older memories come back. */
    TRY(rm_end_session(db, session->session_id, &outcome, &summary));
    printf("session ended: outcome %.2f, %" PRId64 " memories (", summary->outcome_score,
           summary->memory_count);
    for (i = 0; i < summary->by_category_count; i++)
        printf("%s%s: %" PRId64, i ? ", " : "", summary->by_category[i].name, summary->by_category[i].count);
    printf("), %zu related from earlier sessions\n", summary->related_count);

    /* Everything is in the file: close, reopen, read it back. */
    TRY(rm_close(db));
    db = NULL;
    TRY(rm_open(&open_opts, &db));

    TRY(rm_get_memory(db, ids[2], &memory));
    printf("\nafter reopening, #%" PRId64 " reads: %s\n", memory->memory.id, memory->memory.content);
    rm_recall_result_free(hits);
    hits = NULL;
    TRY(recall(db, "*", 100, NULL, NULL, &hits));
    printf("%zu active memories in %s\n", hits->count, path);
    ok = 1;

done:
    rm_string_free(json);
    rm_embedding_info_free(embedding);
    rm_learn_result_free(learned);
    rm_perception_result_free(perception);
    rm_recall_result_free(hits);
    rm_update_result_free(updated);
    rm_forget_result_free(forgotten);
    rm_session_summary_free(summary);
    rm_session_free(session);
    rm_memory_result_free(memory);
    if (db != NULL) {
        rm_status st = rm_close(db);
        if (st != RM_OK) {
            report_failure("rm_close(db)", st);
            ok = 0;
        }
    }
    return ok ? 0 : 1;
}
