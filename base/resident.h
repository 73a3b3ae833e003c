/* The process's resident memory as the kernel counts it: what `remat train`
 * measures beside its own accounting (arena high-water plus fixed bytes),
 * so a user can check the budget's promise against the operating system's
 * figure, and what bench/vs_pytorch_memory.sh reads to compare remat's
 * memory with PyTorch's measured the same way.
 *
 * Linux: /proc/self/status gives VmRSS (now) and VmHWM (the peak), and
 * writing "5" to /proc/self/clear_refs restarts the peak at the present
 * size, so a peak can be taken over a chosen stretch (the training steps,
 * not the solver that ran before them). Elsewhere, or with /proc not
 * mounted, each call returns -1 and callers say nothing was measured. */
#ifndef REMAT_RESIDENT_H
#define REMAT_RESIDENT_H

#include <stddef.h>

/* Bytes resident now and the peak since the process began or the last
 * rm_resident_reset_peak; 0 on success, -1 where the kernel does not say. */
int rm_resident_read(size_t *now, size_t *peak);

/* Restarts the peak at the present resident size; 0 on success, -1 where
 * the kernel offers no reset (the peak then covers the whole process). */
int rm_resident_reset_peak(void);

#endif
