//===- support/JemallocConf.cpp - jemalloc settings of mpc's programs ----===//
//
// A source of each program that links jemalloc (mpc_use_allocator in
// cmake/MpcHelpers.cmake: the mpc tool and mpc-compile-bench), not of a
// library, whose unreferenced objects the linker would drop. jemalloc reads
// this symbol once, at its first allocation; the MALLOC_CONF environment
// variable, read after it, still overrides any setting.
//
// Transparent huge pages for the heap and jemalloc's own metadata: a compile
// touches a few hundred MiB of small objects once each (a 16k-layer chain
// reaches about 340 MiB), and with 4 KiB pages a third of its time went to
// page faults and TLB misses. With 2 MiB pages that compile takes 1.8 s
// instead of 3.0 s on the development machine (docs/passes.md, "Compile
// time"). Where the kernel's THP mode is "never" the setting does nothing;
// in modes "always" and "madvise" jemalloc asks for them. The cost
// is up to one partly used 2 MiB page per arena: a training run's peak RSS
// stays within 1.3x of its minimum (scripts/peak-rss.py, docs/runtime.md).
//
//===----------------------------------------------------------------------===//

extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char *malloc_conf = "thp:always,metadata_thp:always";
}
