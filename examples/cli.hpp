#pragma once
// The command line of the example programs. Each program declares its options, each bound
// to a variable that already holds the default, with one line of help:
//
//   examples::Cli cli("recur_demo", "what the program does");
//   cli.option("--steps", o.steps, "training steps");   // integers, floats, strings, lists
//   cli.flag("--resume", o.resume, "continue from the checkpoint");
//   cli.parse(argc, argv);
//
// --help (or -h) prints the options with their defaults and exits 0; an unknown option or
// a value that does not parse whole ("12x" for an integer) is an error: exit 2. Values
// follow the option ("--steps 10") or are joined to it ("--steps=10"); a list is written
// with commas ("--coefficients 1,0,2").
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace examples {

namespace cli_detail {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

// Parses all of `text` into `out`; false (out unchanged) when any of it is not a value.
template <class T>
bool from_text(std::string_view text, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    out = std::string(text);
    return true;
  } else if constexpr (is_vector<T>::value) {
    T items;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      typename T::value_type item{};
      if (!from_text(text.substr(start, comma - start), item)) return false;
      items.push_back(item);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    out = std::move(items);
    return true;
  } else {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "option of an unsupported type");
    T value{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) return false;
    out = value;
    return true;
  }
}

template <class T>
std::string to_text(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value.empty() ? "\"\"" : value;
  } else if constexpr (is_vector<T>::value) {
    std::string s;
    for (const auto& item : value) {
      if (!s.empty()) s += ',';  // not `(cond ? "" : ",") + to_text(item)`: GCC 12 -Wrestrict false positive
      s += to_text(item);
    }
    return s;
  } else {
    std::ostringstream o;
    o << value;
    return o.str();
  }
}

template <class T>
constexpr const char* placeholder() {
  if constexpr (std::is_same_v<T, std::string>) return "TEXT";
  else if constexpr (is_vector<T>::value) return "A,B,...";
  else if constexpr (std::is_floating_point_v<T>) return "X";
  else return "N";
}

}  // namespace cli_detail

class Cli {
 public:
  Cli(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  // `target` holds the default now and the parsed value after parse().
  template <class T>
  void option(std::string name, T& target, std::string help) {
    options_.push_back({std::move(name), cli_detail::placeholder<T>(), std::move(help), cli_detail::to_text(target),
                        [&target](std::string_view text) { return cli_detail::from_text(text, target); }});
  }
  // A switch without a value: present sets `target` to true.
  void flag(std::string name, bool& target, std::string help) {
    options_.push_back({std::move(name), "", std::move(help), "", [&target](std::string_view) {
                          target = true;
                          return true;
                        }});
  }

  // Fills the targets from the command line; exits on --help (0) and on errors (2).
  void parse(int argc, char** argv) const {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    bool help = false;
    const std::string error = try_parse(args, help);
    if (help) {
      print_usage(std::cout);
      std::exit(0);
    }
    if (!error.empty()) {
      std::cerr << program_ << ": " << error << " (" << program_ << " --help lists the options)\n";
      std::exit(2);
    }
  }

  // parse() without exiting: the problem, or "" when every argument was used; `help` is
  // set when --help was given (nothing after it is read).
  std::string try_parse(const std::vector<std::string_view>& args, bool& help) const {
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string_view arg = args[i], value;
      if (arg == "--help" || arg == "-h") {
        help = true;
        return "";
      }
      const std::size_t eq = arg.find('=');
      const bool joined = arg.starts_with("--") && eq != std::string_view::npos;
      if (joined) value = arg.substr(eq + 1), arg = arg.substr(0, eq);
      const Option* o = find(arg);
      if (o == nullptr) return "unknown option '" + std::string(args[i]) + "'";
      if (o->placeholder.empty()) {
        if (joined) return "'" + std::string(arg) + "' takes no value";
      } else if (!joined) {
        if (i + 1 >= args.size()) return "'" + std::string(arg) + "' needs a value";
        value = args[++i];
      }
      if (!o->set(value))
        return "'" + std::string(value) + "' is not a valid value for " + std::string(arg) + " (" + o->placeholder +
               ")";
    }
    return "";
  }

  void print_usage(std::ostream& out) const {
    out << program_ << ": " << summary_ << "\n\nOptions:\n";
    std::size_t width = 10;
    for (const Option& o : options_) width = std::max(width, head(o).size());
    for (const Option& o : options_) {
      out << "  " << head(o) << std::string(width - head(o).size() + 2, ' ') << o.help;
      if (!o.placeholder.empty()) out << " (default " << o.default_text << ")";
      out << "\n";
    }
    out << "  " << "--help" << std::string(width - 4, ' ') << "print this help and exit\n";
  }

 private:
  struct Option {
    std::string name, placeholder, help, default_text;
    std::function<bool(std::string_view)> set;
  };
  static std::string head(const Option& o) { return o.placeholder.empty() ? o.name : o.name + " " + o.placeholder; }
  const Option* find(std::string_view name) const {
    for (const Option& o : options_)
      if (o.name == name) return &o;
    return nullptr;
  }

  std::string program_, summary_;
  std::vector<Option> options_;
};

}  // namespace examples
