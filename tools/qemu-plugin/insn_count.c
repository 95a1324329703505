/* aisrv tools — a QEMU TCG plugin that counts the guest instructions a program executes, the deterministic proxy
 * for speed that `tools/bench cpu --arch arm64` reports (timing under emulation says nothing about a real core).
 *
 * Loaded by the dynamically linked qemu-user (Debian package qemu-user; qemu-user-static cannot load plugins):
 *   qemu-aarch64 -plugin build/arm64/libinsn_count.so,out=FILE -L / PROGRAM ARGS...
 * At exit it writes "insns N" to FILE (or to QEMU's log, stderr, without out=). Counting is an inline add per
 * executed translation block (its instruction count), so the program runs at close to normal TCG speed.
 * Markers: a guest that makes the (otherwise unused) system call 0x7A15 with argument K gets a line "mark K N" with
 * the count at that moment (bench_cpu_insns --per-op brackets every operator with them). QEMU answers ENOSYS.
 *
 * Debian ships no qemu-plugin.h, so the few declarations needed are written here from the plugin API of QEMU 7.2
 * (QEMU_PLUGIN_VERSION 1; documented in QEMU's docs/devel/tcg-plugins.rst): an opaque translation-block handle, the
 * inline operation ADD_U64 (value 0), and the six functions below, all with C linkage, resolved by QEMU when it
 * loads the plugin. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t plugin_id;
struct qemu_plugin_tb;
enum { INLINE_ADD_U64 = 0 };

typedef void (*tb_trans_cb)(plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*syscall_cb)(plugin_id id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                           uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
typedef void (*atexit_cb)(plugin_id id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op, void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(plugin_id id, atexit_cb cb, void *userdata);
void qemu_plugin_register_vcpu_syscall_cb(plugin_id id, syscall_cb cb);
void qemu_plugin_outs(const char *string);

EXPORT int qemu_plugin_version = 1;

/* One counter: the benchmarks run the kernels on one thread (threads=1), and an inline add from several vCPU
 * threads could lose increments. */
static uint64_t executed;
static char out_path[4096];
enum { MARKER_SYSCALL = 0x7A15, MAX_MARKS = 1 << 16 };
static uint64_t marks[MAX_MARKS][2];
static size_t mark_count;

static void on_syscall(plugin_id id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                       uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8) {
  (void)id, (void)vcpu, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
  if (num != MARKER_SYSCALL || mark_count >= MAX_MARKS) return;
  marks[mark_count][0] = a1;
  marks[mark_count][1] = executed;
  ++mark_count;
}

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &executed, qemu_plugin_tb_n_insns(tb));
}

static void write_report(FILE *f) {
  fprintf(f, "insns %" PRIu64 "\n", executed);
  for (size_t i = 0; i < mark_count; ++i) fprintf(f, "mark %" PRIu64 " %" PRIu64 "\n", marks[i][0], marks[i][1]);
}

static void report(plugin_id id, void *userdata) {
  (void)id;
  (void)userdata;
  if (out_path[0]) {
    FILE *f = fopen(out_path, "w");
    if (f) {
      write_report(f);
      fclose(f);
      return;
    }
  }
  char line[64];
  snprintf(line, sizeof line, "insns %" PRIu64 "\n", executed);
  qemu_plugin_outs(line);
}

EXPORT int qemu_plugin_install(plugin_id id, const void *info, int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path) {
      strcpy(out_path, argv[i] + 4);
    } else {
      fprintf(stderr, "insn_count: unknown argument '%s' (known: out=FILE)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
  qemu_plugin_register_atexit_cb(id, report, NULL);
  return 0;
}
