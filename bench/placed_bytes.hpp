// Where normbench and normbench-team-times put their arrays: page-aligned, zeroed buffers at fixed
// offsets within a page, so that every run (and both programs) place x, y, gamma and beta alike.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace normbench::bench {

// The data arrays (x, y, residual, h) sit at fixed offsets within a 4 KiB page, so that every run
// places them alike. A load whose address matches a pending store's in the low 12 bits waits
// for it (4K aliasing); left to malloc, the distance from x to y modulo the page changed with the
// heap's history. Half a page is the farthest apart they can be. Measured (4 rounds, highway and
// onednn, 3x768, 128x1024, 8x4096): y at 0, 64, 128, 512, 2048, 3968 or 4032 bytes past x's page
// offset moved no median by more than 4%, as the highway kernels load a column's x before storing y.
// gamma and beta are loaded in the same loop as x, ahead of the stores to y, and matter more: with
// x at 0 and y at 2048, single-row highway timings on an Ice Lake VM (medians of 15 x 20000 calls)
// moved with gamma's page offset by up to 1.45x (RMSNorm 1x2048: 190 ns at 0 or 2048, 269-281 ns
// at 1024) and LayerNorm's by 1.2x with gamma and beta at 1536 (1x2048: 278 ns at 0, 337 ns):
// there each load of gamma matches the low 12 bits of a store to y a few iterations earlier and
// waits while it is pending (the kernel now walks such rows backwards, Apply in
// kernels/src/highway_ops-inl.h; these times are from before that). Left to the heap, the offset
// changed with the shapes run before (1x4096 timed 1.1-1.25x 1x4097 in full sweeps, 0.94x alone).
// So gamma and beta sit at x's page offset, 0: no nearer to y's stores than x.
constexpr std::size_t kPage = 4096;

// Huge pages (normbench's --huge-pages): buffers of 2 MiB or more start on a 2 MiB boundary and are marked
// MADV_HUGEPAGE before they are first touched, so that the kernel backs them with transparent
// huge pages even where its policy is `madvise` (this VM's: 4 KiB pages otherwise). Streams over
// 4 KiB pages take a TLB miss, and the hardware prefetcher stops, at every page boundary; the
// ceiling and the kernels run on the same buffers either way.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

struct AlignedFree {
  std::size_t align = kPage;
  void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{align}); }
};

class PlacedBytes {
 public:
  // n zeroed bytes starting page_offset bytes into a page (or, with huge_pages, into a huge page:
  // see kHugePage).
  void assign(std::size_t n, std::size_t page_offset, bool huge_pages) {
    storage_.reset();
    const std::size_t bytes = n + page_offset;
    const std::size_t align = huge_pages && bytes >= kHugePage ? kHugePage : kPage;
    storage_ = Storage(static_cast<unsigned char*>(::operator new(bytes, std::align_val_t{align})), AlignedFree{align});
    if (align == kHugePage) madvise(storage_.get(), bytes, MADV_HUGEPAGE);  // advice only: failure is not an error
    std::memset(storage_.get(), 0, bytes);
    offset_ = page_offset;
    size_ = n;
  }
  unsigned char* data() { return storage_.get() + offset_; }
  const unsigned char* data() const { return storage_.get() + offset_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  using Storage = std::unique_ptr<unsigned char[], AlignedFree>;
  Storage storage_;
  std::size_t offset_ = 0, size_ = 0;
};

// Page offsets: x at 0, y half a page on, the residual-add arrays (r, h) a quarter page past each,
// gamma and beta (and BatchNorm's running statistics) at x's.
constexpr std::size_t kXPageOffset = 0, kYPageOffset = kPage / 2, kResidualPageOffset = kPage / 4,
                      kHPageOffset = kYPageOffset + kPage / 4, kParamPageOffset = kXPageOffset;

}  // namespace normbench::bench
