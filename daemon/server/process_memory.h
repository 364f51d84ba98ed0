// How memqd's process takes memory from the kernel: glibc's allocator settings, and huge pages for its heap.
//
// Why: a save or a recall touches memory the process has not used before (the indexes grow by a row, a reply needs a
// buffer), and each first touch of a 4 KiB page is a page fault: about a microsecond on bare metal, 13 µs in the
// virtual machines docs/performance.md measures on. With the heap in 2 MiB pages a fault covers 512 of them.
#pragma once

namespace memq {

// Called first in memqd's main(), before any thread or file exists. glibc reads its tunables only as a process
// starts, so where the kernel offers transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled is `always`
// or `madvise`) and GLIBC_TUNABLES does not already say what glibc.malloc.hugetlb should be, memqd executes itself
// again, once, with `glibc.malloc.hugetlb=1` added to GLIBC_TUNABLES (same pid, arguments and descriptors). A user's
// own setting of that tunable is kept as it is: `GLIBC_TUNABLES=glibc.malloc.hugetlb=0` turns huge pages off.
// Returns when it did not re-execute (not useful, already done, or execv failed: memqd then runs as it is).
void reexecWithHugePageHeap(char** argv);

// Whether glibc was started with glibc.malloc.hugetlb=1 and the kernel offers transparent huge pages: the heap then
// grows in 2 MiB pages. Reported by daemon/status as `heap_huge_pages`.
bool heapUsesHugePages();

// mallopt settings for a long-running, multi-threaded process (process_memory.cc says why each).
void tuneAllocator();

}  // namespace memq
