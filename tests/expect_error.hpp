#pragma once
// Shared assertions for the error tests: the exception type, the words its message must
// contain, and (with a tape) that the failure recorded nothing.
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include <recur/recur.hpp>

namespace recur::testing {

// Checks that `f` throws E with every string of `mentions` in its message.
template <class E>
void expect_error(const std::function<void()>& f, std::initializer_list<std::string> mentions) {
  try {
    f();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& m : mentions) EXPECT_NE(msg.find(m), std::string::npos) << "'" << m << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// The same, and the tape has not grown: a failed op records nothing.
template <class E>
void expect_clean_failure(Tape& tape, const std::function<void()>& bad, std::initializer_list<std::string> mentions) {
  const auto before = tape.size();
  expect_error<E>(bad, mentions);
  EXPECT_EQ(tape.size(), before) << "a failed op recorded a node";
}

}  // namespace recur::testing
