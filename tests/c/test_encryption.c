/* Encryption at rest through the C ABI. With encryption built in
   (rm_encryption_available()): a file opened with a key opens again only with
   it, RM_KEY for a missing or wrong key or a key for a plain file (the file is
   not modified), rm_rekey() changes the key, a key file works like the bytes.
   Without it: a key is RM_INVALID_ARGUMENT and nothing is created. */
#include "check.h"

#include <sys/stat.h>

static rm_status open_keyed(const char *path, const uint8_t *key, size_t len, const char *key_file,
                            rm_db **out) {
    rm_open_options o;
    CHECK_OK(rm_open_options_init(&o));
    CHECK(o.key == NULL && o.key_len == 0 && o.key_file == NULL);
    o.path = path;
    o.durability = RM_DURABILITY_NORMAL;
    o.embeddings = false;
    o.key = key;
    o.key_len = len;
    o.key_file = key_file;
    return rm_open(&o, out);
}

/* The file's bytes (at most 1 MiB), to compare before and after. */
static size_t read_file(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n;
    if (f == NULL) return 0;
    n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static unsigned char before_[1 << 20], after_[1 << 20];

static void check_refused(const char *path, const uint8_t *key, size_t len) {
    rm_db *db = (rm_db *)0x1;
    size_t n = read_file(path, before_, sizeof before_);
    CHECK_STATUS(open_keyed(path, key, len, NULL, &db), RM_KEY);
    CHECK(db == (rm_db *)0x1); /* outputs only on success */
    CHECK(strstr(rm_last_error(), "was not modified") != NULL);
    CHECK(read_file(path, after_, sizeof after_) == n && memcmp(before_, after_, n) == 0);
}

int main(void) {
    uint8_t key[32], other[32];
    test_db_path p, plain;
    rm_db *db = NULL;
    rm_recall_result *r;
    size_t i;
    for (i = 0; i < 32; i++) key[i] = (uint8_t)(i * 7 + 1), other[i] = (uint8_t)(255 - i);
    test_db_path_init(&p, "secret");
    test_db_path_init(&plain, "plain");
    CHECK(RM_KEY == 16 && strcmp(rm_status_str(RM_KEY), "RM_KEY") == 0);
    if (!rm_encryption_available()) {
        CHECK_STATUS(open_keyed(p.path, key, 32, NULL, &db), RM_INVALID_ARGUMENT);
        CHECK(strstr(rm_last_error(), "without encryption") != NULL && access(p.path, F_OK) != 0);
        printf("test_encryption: built without encryption: a key is refused (RM_INVALID_ARGUMENT)\n");
        test_db_path_remove(&p);
        test_db_path_remove(&plain);
        return 0;
    }
    CHECK_STATUS(open_keyed(p.path, key, 31, NULL, &db), RM_INVALID_ARGUMENT);
    CHECK_STATUS(open_keyed(p.path, key, 32, "/nonexistent/key", &db), RM_INVALID_ARGUMENT);
    CHECK_OK(open_keyed(p.path, key, 32, NULL, &db));
    test_learn_in(db, "the conveyor stops when the light curtain is crossed", NULL, NULL, NULL);
    CHECK_OK(rm_close(db));
    check_refused(p.path, NULL, 0);
    check_refused(p.path, other, 32);
    /* A key file holding the same key in hex opens it. */
    {
        char kf[320];
        FILE *f;
        snprintf(kf, sizeof kf, "%s/key", p.dir);
        f = fopen(kf, "w");
        CHECK(f != NULL);
        for (i = 0; i < 32; i++) fprintf(f, "%02x", key[i]);
        fputc('\n', f);
        fclose(f);
        CHECK(chmod(kf, 0644) == 0);
        CHECK_STATUS(open_keyed(p.path, NULL, 0, kf, &db), RM_INVALID_ARGUMENT); /* others may read it */
        CHECK(chmod(kf, 0600) == 0);
        CHECK_OK(open_keyed(p.path, NULL, 0, kf, &db));
        CHECK_STATUS(open_keyed(p.path, key, 32, kf, &db), RM_INVALID_ARGUMENT); /* both */
        unlink(kf);
    }
    r = test_recall_in(db, "light curtain", NULL, 5, NULL, NULL, NULL);
    CHECK(r->count == 1);
    rm_recall_result_free(r);
    CHECK_STATUS(rm_rekey(db, NULL, 32), RM_INVALID_ARGUMENT);
    CHECK_STATUS(rm_rekey(db, other, 16), RM_INVALID_ARGUMENT);
    {
        rm_db *second = NULL;
        CHECK_OK(open_keyed(p.path, key, 32, NULL, &second));
        CHECK_STATUS(rm_rekey(db, other, 32), RM_BUSY); /* not alone */
        CHECK_OK(rm_close(second));
    }
    CHECK_OK(rm_rekey(db, other, 32));
    CHECK_OK(rm_close(db));
    check_refused(p.path, key, 32);
    CHECK_OK(open_keyed(p.path, other, 32, NULL, &db));
    r = test_recall_in(db, "conveyor", NULL, 5, NULL, NULL, NULL);
    CHECK(r->count == 1);
    rm_recall_result_free(r);
    CHECK_OK(rm_close(db));
    /* A plain file given a key. */
    CHECK_OK(open_keyed(plain.path, NULL, 0, NULL, &db));
    test_learn_in(db, "plain memory", NULL, NULL, NULL);
    CHECK_STATUS(rm_rekey(db, key, 32), RM_INVALID_ARGUMENT);
    CHECK_OK(rm_close(db));
    check_refused(plain.path, key, 32);
    test_db_path_remove(&p);
    test_db_path_remove(&plain);
    printf("test_encryption: ok\n");
    return 0;
}
