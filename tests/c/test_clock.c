/* rm_open_options.clock through the C ABI: a simulated clock decides creation
 * times and expiry (a memory leaves recall when the clock passes its expiry,
 * not the system's), rm_open_as_of's "not in the future", readings that are not
 * times (the system clock then), and a view from rm_open_as_of that outlives
 * its handle without ever calling the handle's clock. */
#include "check.h"

/* 2031-05-04T03:02:01.000Z */
#define START_MS INT64_C(1935630121000)

typedef struct {
    int64_t ms;
    int calls;
    int frees;  /* calls of clock_free */
    int closed; /* set after rm_close(): a call then is a use after close */
} sim_clock;

static int64_t sim_read(void *context) {
    sim_clock *c = (sim_clock *)context;
    CHECK(!c->closed);
    c->calls++;
    return c->ms;
}

static void sim_free(void *context) {
    ((sim_clock *)context)->frees++;
}

static rm_db *open_on(const char *path, sim_clock *c) {
    rm_open_options o;
    rm_db *db = NULL;
    CHECK_OK(rm_open_options_init(&o));
    CHECK(o.clock == NULL && o.clock_context == NULL && o.clock_free == NULL);
    o.path = path;
    o.durability = RM_DURABILITY_NORMAL;
    o.clock = sim_read;
    o.clock_context = c;
    o.clock_free = sim_free;
    CHECK_OK(rm_open(&o, &db));
    return db;
}

static int64_t learn_ttl(rm_db *db, const char *text, double ttl) {
    rm_learn_options o;
    rm_learn_result *r = NULL;
    int64_t id;
    CHECK_OK(rm_learn_options_init(&o));
    o.ttl_seconds = ttl;
    CHECK_OK(rm_learn(db, text, &o, &r));
    id = r->memory_id;
    rm_learn_result_free(r);
    return id;
}

static void test_clock(const char *path) {
    sim_clock c = {START_MS, 0, 0, 0};
    rm_db *db = open_on(path, &c), *view = NULL;
    rm_memory_result *m = NULL;
    rm_recall_result *r;
    int64_t id = learn_ttl(db, "the loading bay door is stuck half open", 600.0);
    CHECK(c.calls > 0);

    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK_STREQ(m->memory.created_at, "2031-05-04T03:02:01.000Z");
    CHECK_STREQ(m->memory.expires_at, "2031-05-04T03:12:01.000Z");
    CHECK(!m->memory.expired);
    rm_memory_result_free(m);

    /* One millisecond before its expiry on the clock, then at it. */
    c.ms = START_MS + 600 * 1000 - 1;
    r = test_recall(db, "loading bay door", 10);
    CHECK(r->count == 1 && r->hits[0].memory.id == id);
    rm_recall_result_free(r);
    c.ms += 1;
    r = test_recall(db, "loading bay door", 10);
    CHECK(r->count == 0);
    rm_recall_result_free(r);
    CHECK_OK(rm_get_memory(db, id, &m));
    CHECK(m->memory.expired && m->memory.status == RM_MEMORY_ACTIVE);
    rm_memory_result_free(m);

    /* "As of": the clock's future is refused (2031 is the system clock's future
     * too); a time on the clock before the expiry shows the memory. */
    CHECK_STATUS(rm_open_as_of(db, "2031-05-04T03:12:01.001Z", &view), RM_INVALID_ARGUMENT);
    CHECK(view == NULL);
    CHECK_OK(rm_open_as_of(db, "2031-05-04T03:05:00.000Z", &view));

    /* Readings that are not times: the system clock for that call. */
    c.ms = -5;
    {
        int64_t other = learn_ttl(db, "the epoch is not a time the robot lives in", 60.0);
        CHECK_OK(rm_get_memory(db, other, &m));
        /* The system's time: not the simulated 2031, not 1970. */
        CHECK(strncmp(m->memory.created_at, "2031", 4) != 0 && strcmp(m->memory.created_at, "2026") > 0);
        CHECK(!m->memory.expired);
        rm_memory_result_free(m);
    }

    /* The view outlives its handle and never calls the handle's clock, which
     * is handed back (clock_free) once the handle is closed. */
    CHECK(c.frees == 0);
    CHECK_OK(rm_close(db));
    CHECK(c.frees == 1);
    c.closed = 1;
    r = test_recall(view, "loading bay door", 10);
    CHECK(r->count == 1 && r->hits[0].memory.id == id);
    rm_recall_result_free(r);
    CHECK_OK(rm_get_memory(view, id, &m));
    CHECK(!m->memory.expired);
    rm_memory_result_free(m);
    CHECK_OK(rm_close(view));
}

/* A failed rm_open hands the clock back too, whichever option failed. */
static void test_failed_open(void) {
    sim_clock c = {START_MS, 0, 0, 0};
    rm_open_options o;
    rm_db *db = NULL;
    CHECK_OK(rm_open_options_init(&o));
    o.clock = sim_read;
    o.clock_context = &c;
    o.clock_free = sim_free;
    o.path = ":memory:";
    o.busy_timeout_ms = 4000000000u; /* out of range */
    CHECK_STATUS(rm_open(&o, &db), RM_INVALID_ARGUMENT);
    CHECK(db == NULL && c.frees == 1 && c.calls == 0);
    o.busy_timeout_ms = 1000;
    CHECK_STATUS(rm_open(&o, NULL), RM_INVALID_ARGUMENT);
    CHECK(c.frees == 2);
}

int main(void) {
    test_failed_open();
    test_db_path p;
    test_db_path_init(&p, "clock");
    test_clock(p.path);
    test_db_path_remove(&p);
    printf("test_clock: ok\n");
    return 0;
}
