#pragma once
// The registry of live tapes: which tape a Var names, and which tape is current on each
// thread. A Var names (slot, serial); a slot's serial changes when its tape dies, so a stale
// Var is detected without touching freed memory.
#include <atomic>
#include <cstdint>

namespace recur {
class Tape;
}

namespace recur::detail {

inline constexpr std::uint32_t kTapeSlots = 1u << 16;
struct TapeSlot {
  std::atomic<std::uint64_t> serial{0};  // 0: free
  Tape* tape = nullptr;
};
extern TapeSlot tape_slots[kTapeSlots];

struct TapeTicket {
  std::uint32_t slot;
  std::uint64_t serial;  // never reused
};
// Gives a new tape a slot and a serial and makes it the current tape of this thread.
TapeTicket register_tape(Tape& tape);
// Frees the tape's slot (Vars naming it become stale) and removes it from the current
// tapes of this thread.
void unregister_tape(Tape& tape, std::uint32_t slot);

// The live tape that (slot, serial) names, nullptr once it died.
inline Tape* live_tape(std::uint32_t slot, std::uint64_t serial) {
  const TapeSlot& s = tape_slots[slot];
  return s.serial.load(std::memory_order_acquire) == serial ? s.tape : nullptr;
}

}  // namespace recur::detail
