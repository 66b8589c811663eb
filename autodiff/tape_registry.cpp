#include <recur/autodiff/tape_registry_detail.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

#include <recur/autodiff/tape.hpp>

namespace recur {
namespace detail {

TapeSlot tape_slots[kTapeSlots];

namespace {
std::mutex slot_mutex;
std::vector<std::uint32_t> free_slots;
std::uint32_t next_unused_slot = 1;  // slot 0 stays free: a default Var names it
std::uint64_t next_serial = 1;       // serial 0 means "no tape"

thread_local std::vector<Tape*> current_tapes;  // innermost last
}  // namespace

TapeTicket register_tape(Tape& tape) {
  TapeTicket ticket{};
  {
    std::lock_guard lock(slot_mutex);
    if (next_serial >> Var::kSerialBits)
      fail<TapeError>("Tape", "this process has made 2^", Var::kSerialBits, " tapes, as many as Vars can tell apart");
    if (!free_slots.empty()) {
      ticket.slot = free_slots.back();
      free_slots.pop_back();
    } else {
      if (next_unused_slot == kTapeSlots) fail<TapeError>("Tape", "more than ", kTapeSlots - 1, " live tapes");
      ticket.slot = next_unused_slot++;
    }
    ticket.serial = next_serial++;
    tape_slots[ticket.slot].tape = &tape;
    tape_slots[ticket.slot].serial.store(ticket.serial, std::memory_order_release);
  }
  current_tapes.push_back(&tape);
  return ticket;
}

void unregister_tape(Tape& tape, std::uint32_t slot) {
  {
    std::lock_guard lock(slot_mutex);
    tape_slots[slot].serial.store(0, std::memory_order_release);
    tape_slots[slot].tape = nullptr;
    free_slots.push_back(slot);
  }
  auto it = std::find(current_tapes.rbegin(), current_tapes.rend(), &tape);
  if (it != current_tapes.rend()) current_tapes.erase(std::next(it).base());
}

}  // namespace detail

Tape& Tape::current() {
  if (detail::current_tapes.empty())
    fail<TapeError>("Tape::current", "no live Tape on this thread: create a recur::Tape before using Vars");
  return *detail::current_tapes.back();
}

}  // namespace recur
