// How memqd's process takes memory from the kernel: glibc's allocator settings, and huge pages for its heap.
//
// Why: a save or a recall touches memory the process has not used before (the indexes grow by a row, a reply needs a
// buffer), and each first touch of a 4 KiB page is a page fault: about a microsecond on bare metal, 13 µs in the
// virtual machines docs/performance.md measures on. With the heap in 2 MiB pages a fault covers 512 of them.
#pragma once

namespace memq {

// Called first in memqd's main(), before any thread or file exists. glibc reads its tunables only as a process
// starts, and asks the kernel for huge pages (`madvise(MADV_HUGEPAGE)` on its main heap and on blocks it maps) only
// when started with glibc.malloc.hugetlb=1. So where the kernel gives huge pages on request
// (/sys/kernel/mm/transparent_hugepage/enabled is `madvise`) and GLIBC_TUNABLES does not already say what
// glibc.malloc.hugetlb should be, memqd executes itself again, once, with `glibc.malloc.hugetlb=1` added to
// GLIBC_TUNABLES (same pid, arguments and descriptors). Not with `always` (the kernel gives them unasked) or `never`,
// not in a sanitizer build (its allocator is not glibc's), not in a secure-execution process (setuid, file
// capabilities: glibc ignores GLIBC_TUNABLES there). A user's own setting of the tunable is kept as it is:
// `GLIBC_TUNABLES=glibc.malloc.hugetlb=0` turns huge pages off. Returns when it did not re-execute (memqd then runs
// as it is).
void reexecWithHugePageHeap(char** argv);

// Whether the heap's larger stretches (the main heap, the big blocks such as the vector index's rows) grow in 2 MiB
// transparent huge pages: the kernel's mode is `always`, or `madvise` with glibc started with glibc.malloc.hugetlb=1
// (and glibc's allocator in use). Worked out once, at the first call. Reported by daemon/status as
// `heap_huge_pages`.
bool heapUsesHugePages();

// mallopt settings for a long-running, multi-threaded process (process_memory.cc says why each).
void tuneAllocator();

}  // namespace memq
