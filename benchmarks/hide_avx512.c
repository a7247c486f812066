/* Preloaded into a process (LD_PRELOAD), hides AVX-512, VNNI and AMX from the processor's
 * CPUID answers, so that onnxruntime (which picks its int8 kernels from CPUID) takes the
 * AVX2 path it takes on processors without them: vpmaddubsw, whose 16-bit pair sums
 * saturate. Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, on processors that have it)
 * turns every CPUID instruction into a SIGSEGV, answered here with the features masked.
 * benchmarks/kernel_paths.py builds and uses it; tests/test_embedding_kernels.py too.
 *
 * The process must not install a SIGSEGV handler of its own afterwards (Python's faulthandler
 * does: leave PYTHONFAULTHANDLER unset). If the processor cannot fault on CPUID, nothing is
 * hidden and `HIDE_AVX512_STATE` stays unset; it says "hidden" when the mask is on. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define BIT(n) (1u << (n))

static void answer_cpuid(int sig, siginfo_t *info, void *context) {
    (void)info;
    ucontext_t *uc = context;
    greg_t *regs = uc->uc_mcontext.gregs;
    const uint8_t *ip = (const uint8_t *)regs[REG_RIP];
    if (ip[0] != 0x0f || ip[1] != 0xa2) { /* not CPUID: a real fault */
        signal(sig, SIG_DFL);
        return;
    }
    unsigned leaf = (unsigned)regs[REG_RAX], subleaf = (unsigned)regs[REG_RCX];
    unsigned a, b, c, d;
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    __cpuid_count(leaf, subleaf, a, b, c, d);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    if (leaf == 7 && subleaf == 0) {
        /* EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL */
        b &= ~(BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31));
        /* ECX: VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
        c &= ~(BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14));
        /* EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512-FP16, AMX-TILE, AMX-INT8 */
        d &= ~(BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25));
    } else if (leaf == 7 && subleaf == 1) {
        /* EAX: AVX-VNNI, AVX512-BF16, AVX-IFMA; EDX: AVX-VNNI-INT8, AVX-NE-CONVERT,
         * AVX-VNNI-INT16, AVX10 */
        a &= ~(BIT(4) | BIT(5) | BIT(23));
        d &= ~(BIT(4) | BIT(5) | BIT(10) | BIT(19));
    }
    regs[REG_RAX] = a;
    regs[REG_RBX] = b;
    regs[REG_RCX] = c;
    regs[REG_RDX] = d;
    regs[REG_RIP] += 2;
}

__attribute__((constructor)) static void hide_avx512(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = answer_cpuid;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    if (sigaction(SIGSEGV, &action, 0) != 0) return;
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) == 0) {
        setenv("HIDE_AVX512_STATE", "hidden", 1);
    } else {
        signal(SIGSEGV, SIG_DFL);
    }
}
