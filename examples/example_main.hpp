#pragma once
// The main() every example program shares. An example declares its options, each bound to
// a field of its Options struct (which holds the defaults), and a run function:
//
//   void declare_options(CLI::App& app, Options& o) {
//     app.add_option("--steps", o.steps, "training steps")->check(examples::at_least(1L));
//     app.add_flag("--resume", o.resume, "continue from the checkpoint");
//   }
//   int run(const Options& o) { ...; return 0; }   // the exit status
//   int main(int argc, char** argv) {
//     return examples::example_main(argc, argv, "recur_demo", "what the program does", declare_options, run);
//   }
//
// and the command line is parsed by CLI11, the same way for every program:
//   --help (-h) prints the options with their defaults: exit 0;
//   an unknown option, a value that does not parse whole ("12x" for an integer) or is out of
//     range, or options that do not go together: the problem on stderr, exit 2;
//   an exception while running: "<program>: error: <what>" on stderr, exit 1.
// Values follow the option ("--steps 10") or are joined to it ("--steps=10"); a list option
// takes its items separated by commas ("--coefficients 1,0,2"). Checks that involve several
// options go in declare_options as app.final_callback(...) throwing CLI::ValidationError.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace examples {

// A value check for add_option(...)->check(): the option's value must be >= `least`
// (--help shows "AT LEAST least" after the option's type).
template <class T>
CLI::Validator at_least(T least) {
  std::ostringstream text_least;
  text_least << least;
  return CLI::Validator(
      [least, shown = text_least.str()](std::string& text) -> std::string {
        const std::string problem = "must be at least " + shown + ", got " + text;
        // CLI11 2.1 converts "-1" to an unsigned type by wrapping it around.
        if (std::is_unsigned_v<T> && text.find('-') != std::string::npos) return problem;
        T value{};
        // The conversion CLI11 applies to the option's value afterwards.
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        return value >= least ? std::string() : problem;
      },
      "AT LEAST " + text_least.str());
}

// A value check made of a parser that throws std::invalid_argument on a value it rejects
// (its message becomes the error).
template <class Parse>
CLI::Validator parses_with(Parse parse, std::string description) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      std::move(description));
}

template <class Options>
int example_main(int argc, char** argv, const std::string& program, const std::string& summary,
                 void (*declare_options)(CLI::App&, Options&), int (*run)(const Options&)) {
  Options options;
  CLI::App app(summary, program);
  app.option_defaults()->always_capture_default();  // --help shows each default
  declare_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or the problem printed (CLI11's codes are all 2 here)
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
}

}  // namespace examples
