#pragma once
// The config sections that layers above the runtime define (the compiler's, the benchmark's, the policy's:
// actors/options/). Each registers its keys, checks and derived defaults here, once, at static
// initialisation; the config holds its value type-erased, so the runtime parses, checks and dumps every key
// without including the domain's headers, and a role reads its own section by type:
// cfg.section<actors::compiler_section>(). A section type T is copyable, default-constructs to its
// defaults and names its YAML key in `static constexpr const char* section_name`.
#include <any>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "messages/expected.hpp"
#include "runtime/config/config_fields.hpp"

namespace crucible::runtime {

struct config;

/// Whether a key (its full path, "compiler.cxx") was written in the file or by --set.
using key_is_set = std::function<bool(const std::string& path)>;

/// One registered section, type-erased. Every hook but make and fields may be empty.
struct section_schema {
  std::string name;                             ///< the YAML section; its keys are name.<field key>
  std::function<std::any()> make;               ///< the section's defaults
  std::function<field_list(std::any&)> fields;  ///< keys relative to the section, bound to its fields
  /// After every key is read: errors name the key (the whole config is there for cross-key rules).
  std::function<status(const std::any&, const config&)> validate;
  /// After validation: defaults that depend on other keys (the target's compiler), for keys not set.
  std::function<void(std::any&, const config&, const key_is_set&)> resolve;
  /// When a run directory is prepared: paths inside it (caches, logs).
  std::function<status(std::any&, const std::string& run_dir)> bind_run;
};

/// Adds a section; a second section of the same name, or one named like a core key, aborts at start
/// (two layers claiming one key is a build mistake, not a user's).
void register_config_section(section_schema schema);
const std::vector<section_schema>& config_section_schemas();

/// The typed hooks of section T (any may be null but fields).
template <class T>
struct section_hooks {
  field_list (*fields)(T&) = nullptr;
  status (*validate)(const T&, const config&) = nullptr;
  void (*resolve)(T&, const config&, const key_is_set&) = nullptr;
  status (*bind_run)(T&, const std::string& run_dir) = nullptr;
};

/// Registers T under T::section_name; returns true so a namespace-scope constant can hold the call.
template <class T>
bool register_section(section_hooks<T> h) {
  section_schema s;
  s.name = T::section_name;
  s.make = [] { return std::any(T{}); };
  s.fields = [f = h.fields](std::any& v) { return f(std::any_cast<T&>(v)); };
  if (h.validate)
    s.validate = [f = h.validate](const std::any& v, const config& c) {
      return f(std::any_cast<const T&>(v), c);
    };
  if (h.resolve)
    s.resolve = [f = h.resolve](std::any& v, const config& c, const key_is_set& set) {
      f(std::any_cast<T&>(v), c, set);
    };
  if (h.bind_run)
    s.bind_run = [f = h.bind_run](std::any& v, const std::string& dir) {
      return f(std::any_cast<T&>(v), dir);
    };
  register_config_section(std::move(s));
  return true;
}

/// The registered sections' values of one config, by section name. A section nobody parsed reads as its
/// defaults.
class config_sections {
 public:
  template <class T>
  const T& get() const {
    auto it = values_.find(T::section_name);
    if (it == values_.end() || !it->second.has_value()) {
      static const T defaults{};
      return defaults;
    }
    return std::any_cast<const T&>(it->second);
  }
  template <class T>
  T& get() {
    auto& v = values_[T::section_name];
    if (!v.has_value()) v = T{};
    return std::any_cast<T&>(v);
  }
  /// The value of a registered section by name, made from its defaults when absent (for the parser).
  std::any& slot(const section_schema& schema);

 private:
  std::map<std::string, std::any> values_;
};

}  // namespace crucible::runtime
