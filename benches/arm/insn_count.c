/* Instruction counter for qemu-user (TCG plugin API version 1, QEMU 7.x), used by
 * scripts/aarch64-budget.sh to count the guest instructions of each phase of
 * benches/arm/budget.rs under qemu-aarch64 (Debian's dynamic qemu-user has
 * plugin support; Debian ships no plugin and no qemu-plugin.h, so the few
 * declarations this file needs are written out below, as documented in QEMU's
 * "QEMU TCG Plugins" manual for that version).
 *
 * Every translated block adds its instruction count to a counter when it runs
 * (an atomic add in an execution callback, exact with several guest threads).
 * A phase mark is the guest's write(2) to file descriptor -1 (which fails with
 * EBADF and does nothing else): at each one the plugin prints
 *     insn-count mark <n> <instructions since the previous mark>
 * where n is the write's byte count (the budget bench passes its phase number),
 * and at exit `insn-count total <instructions>`.
 *
 * Build: gcc -shared -fPIC -O2 -o libinsn_count.so benches/arm/insn_count.c
 * Use:   qemu-aarch64 -plugin ./libinsn_count.so -d plugin -D counts.txt PROGRAM ...
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
typedef struct {
    const char *target_name; /* the first member of qemu_info_t */
} info_head;

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);
typedef void (*syscall_cb)(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num, uint64_t a1, uint64_t a2,
                           uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb, enum qemu_plugin_cb_flags flags,
                                          void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, syscall_cb cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
void qemu_plugin_outs(const char *string);

static uint64_t count;     /* instructions executed */
static uint64_t last_mark; /* count at the previous mark */
static int64_t write_nr;   /* write(2)'s number on the guest */

static void on_exec(unsigned int vcpu, void *n) {
    (void)vcpu;
    __atomic_fetch_add(&count, (uint64_t)(uintptr_t)n, __ATOMIC_RELAXED);
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                       uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8) {
    (void)id, (void)vcpu, (void)a2, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
    if (num != write_nr || (int32_t)a1 != -1) return;
    uint64_t now = __atomic_load_n(&count, __ATOMIC_RELAXED);
    char line[96];
    snprintf(line, sizeof line, "insn-count mark %llu %llu\n", (unsigned long long)a3,
             (unsigned long long)(now - last_mark));
    last_mark = now;
    qemu_plugin_outs(line);
}

static void on_exit(qemu_plugin_id_t id, void *p) {
    (void)id, (void)p;
    char line[64];
    snprintf(line, sizeof line, "insn-count total %llu\n", (unsigned long long)count);
    qemu_plugin_outs(line);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const info_head *info, int argc, char **argv) {
    (void)argc, (void)argv;
    if (strcmp(info->target_name, "aarch64") == 0) {
        write_nr = 64;
    } else if (strcmp(info->target_name, "x86_64") == 0) {
        write_nr = 1;
    } else {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
