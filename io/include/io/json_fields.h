// A JSON record's keys declared once, and its writer and its reader derived from that declaration.
// A record type declares its fields in one function template, called with a writer or a reader:
//
//   template <class V, class R>  // R: the record, const for the writer
//   void my_fields(V& v, R& r) {
//       v("m", r.m, io::range{1, max_dimension});            // an unsigned integer in its range
//       v("layer", r.layer, io::one_of{layer_names});        // a string from a list
//       v("dtype", r.dtype, io::named{dtype_names});          // an enum, as its name in its table
//       v("dataflows", r.dataflows, io::named{dataflow_kind_names});  // a vector of enums, as names
//       v("engine", r.engine, io::then([&](const auto& f) { ... }));  // checked once it is read
//       v.object("memory", [&](auto& m) { m("a_sram", r.memory.a_sram); });
//       v.list("folds", r.folds, [&](auto& e, auto& g) { e("count", g.count); });
//       v.shown("array", [&] { return r.array_name(); });  // written, never read back
//   }
//
// io::write_fields(record, my_fields) gives the JSON object; io::read_fields<error>(j, source,
// record, my_fields) fills the record, checking each value as it reads it: every number an unsigned
// integer in its range, every name from its list, every list of the right kind; anything else
// throws `error` naming the source and the field ("jobs/x.json: field 'm': ..."). Rules other than
// the type's are the reader's; the writer ignores them. Fields are read in declaration order, so a
// rule may use the fields declared before it. std::optional members are left out when empty and
// read as empty when absent. A double is a real number >= 0, or "inf" (JSON has no infinity).
// Plain C++ over nlohmann::json.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/text.h"

namespace systolic::io {

// An unsigned integer's range, both ends included.
struct range {
    std::uint64_t min = 0, max = ~std::uint64_t{0};
};

// A string that must be one of `names` (any range of things a std::string compares with).
template <class Names>
struct one_of {
    const Names& names;
};
template <class Names>
one_of(const Names&) -> one_of<Names>;

// An enum member written and read as its name in `table`, a names.h table (entries with `value`
// and `name`).
template <class Table>
struct named {
    const Table& table;
};
template <class Table>
named(const Table&) -> named<Table>;

// A check run by the reader once the field is read, with the reader (its fail() names fields).
template <class F>
struct then_rule {
    F check;
};
template <class F>
then_rule<F> then(F f) {
    return {std::move(f)};
}

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_enum_vector : std::false_type {};
template <class T>
struct is_enum_vector<std::vector<T>> : std::is_enum<T> {};
template <class T>
struct is_named : std::false_type {};
template <class Table>
struct is_named<named<Table>> : std::true_type {};
template <class T>
struct is_then : std::false_type {};
template <class F>
struct is_then<then_rule<F>> : std::true_type {};
}  // namespace detail

// Writes each declared field into a JSON object.
class json_writer {
public:
    explicit json_writer(nlohmann::json& out) : m_out(out) {}

    template <class T, class... Rules>
    void operator()(const char* key, const T& value, const Rules&... rules) {
        if constexpr (detail::is_optional<T>::value) {
            if (value) (*this)(key, *value, rules...);
        } else if constexpr (std::is_same_v<T, double>) {
            m_out[key] = std::isinf(value) ? nlohmann::json("inf") : nlohmann::json(value);
        } else if constexpr (std::is_enum_v<T>) {
            static_assert((detail::is_named<Rules>::value || ...), "an enum field needs its io::named table");
            (write_name(m_out[key], value, rules), ...);
        } else if constexpr (detail::is_enum_vector<T>::value) {
            static_assert((detail::is_named<Rules>::value || ...), "an enum field needs its io::named table");
            nlohmann::json items = nlohmann::json::array();
            for (const auto e : value) {
                nlohmann::json name;
                (write_name(name, e, rules), ...);
                items.push_back(std::move(name));
            }
            m_out[key] = std::move(items);
        } else {
            m_out[key] = value;
        }
    }
    template <class T, class Rule>
    static void write_name(nlohmann::json& out, T value, const Rule& rule) {
        if constexpr (detail::is_named<Rule>::value)
            for (const auto& e : rule.table)
                if (e.value == value) out = e.name;
    }

    // A nested object whose fields `f(writer)` declares; an optional one is left out when empty.
    template <class F>
    void object(const char* key, F&& f) {
        nlohmann::json sub = nlohmann::json::object();
        json_writer w(sub);
        f(w);
        m_out[key] = std::move(sub);
    }
    // A nested object held in a member, its fields declared by `f(writer, member)`; an empty
    // optional one is left out.
    template <class T, class F>
    void object(const char* key, const T& value, F&& f) {
        if constexpr (detail::is_optional<T>::value) {
            if (value) object(key, [&](auto& w) { f(w, *value); });
        } else {
            object(key, [&](auto& w) { f(w, value); });
        }
    }
    // A list of objects, each element's fields declared by `f(writer, element)`.
    template <class T, class F>
    void list(const char* key, const std::vector<T>& values, F&& f) {
        nlohmann::json items = nlohmann::json::array();
        for (const auto& v : values) {
            nlohmann::json sub = nlohmann::json::object();
            json_writer w(sub);
            f(w, v);
            items.push_back(std::move(sub));
        }
        m_out[key] = std::move(items);
    }
    // A value the record derives from its fields: written for the reader of the file, not read back.
    template <class F>
    void shown(const char* key, F&& value) {
        m_out[key] = value();
    }

private:
    nlohmann::json& m_out;
};

// Reads each declared field from a JSON object, or throws Error naming the source and the field.
template <class Error>
class json_reader {
public:
    json_reader(const nlohmann::json& in, const std::string& source, const char* list = nullptr)
        : m_in(in), m_source(source), m_list(list) {}

    // Fields of a list's elements are named by the list in messages.
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(m_source + ": field '" + (m_list ? std::string(m_list) : field) + "': " + what);
    }

    template <class T, class... Rules>
    void operator()(const char* key, T& value, const Rules&... rules) {
        if constexpr (detail::is_optional<T>::value) {
            if (!m_in.is_object() || !m_in.contains(key)) {
                value.reset();
                return;
            }
            value.emplace();
            read(at(key), key, *value, rules...);
        } else {
            read(at(key), key, value, rules...);
        }
        (run_then(rules), ...);
    }
    template <class F>
    void object(const char* key, F&& f) {
        json_reader sub(at(key), m_source, m_list);
        f(sub);
    }
    template <class T, class F>
    void object(const char* key, T& value, F&& f) {
        if constexpr (detail::is_optional<T>::value) {
            if (!m_in.is_object() || !m_in.contains(key)) {
                value.reset();
                return;
            }
            value.emplace();
            object(key, [&](auto& r) { f(r, *value); });
        } else {
            object(key, [&](auto& r) { f(r, value); });
        }
    }
    template <class T, class F>
    void list(const char* key, std::vector<T>& values, F&& f) {
        const nlohmann::json& items = at(key);
        if (!items.is_array()) fail(key, "expected a list, got " + shown(items));
        values.clear();
        for (const auto& item : items) {
            json_reader sub(item, m_source, m_list ? m_list : key);
            f(sub, values.emplace_back());
        }
    }
    template <class F>
    void shown(const char*, F&&) {}

    const nlohmann::json& at(const char* key) const {
        if (!m_in.is_object()) fail(key, "its object is " + shown(m_in));
        const auto it = m_in.find(key);
        if (it == m_in.end()) fail(key, "missing");
        return *it;
    }

private:
    // The value's type's rule, then the range or the list.
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, std::uint64_t& out, const Rules&... rules) const {
        out = number(v, key, rules...);
    }
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, std::string& out, const Rules&... rules) const {
        if (!v.is_string()) fail(key, "expected a string, got " + shown(v));
        out = v.get<std::string>();
        (check_name(out, key, rules), ...);
    }
    template <class T, class... Rules, std::enable_if_t<std::is_enum_v<T>, int> = 0>
    void read(const nlohmann::json& v, const char* key, T& out, const Rules&... rules) const {
        static_assert((detail::is_named<Rules>::value || ...), "an enum field needs its io::named table");
        if (!v.is_string()) fail(key, "expected a string, got " + shown(v));
        const std::string s = v.get<std::string>();
        (read_name(s, key, out, rules), ...);
    }
    // A list of names, each read as the enum field above.
    template <class T, class... Rules, std::enable_if_t<std::is_enum_v<T>, int> = 0>
    void read(const nlohmann::json& v, const char* key, std::vector<T>& out, const Rules&... rules) const {
        if (!v.is_array()) fail(key, "expected a list, got " + shown(v));
        out.clear();
        for (const auto& e : v)
            read(e, key, out.emplace_back(), rules...);
    }
    template <class T, class Rule>
    void read_name(const std::string& s, const char* key, T& out, const Rule& rule) const {
        if constexpr (detail::is_named<Rule>::value) {
            std::string all;
            for (const auto& e : rule.table) {
                if (s == e.name) {
                    out = e.value;
                    return;
                }
                all += (all.empty() ? "" : ", ") + std::string(e.name);
            }
            fail(key, "'" + printable(s.substr(0, 40)) + "' is not one of " + all);
        }
    }
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, bool& out, const Rules&...) const {
        if (!v.is_boolean()) fail(key, "expected true or false, got " + shown(v));
        out = v.get<bool>();
    }
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, double& out, const Rules&...) const {
        if (v.is_string() && v.get<std::string>() == "inf") {
            out = HUGE_VAL;
            return;
        }
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
            fail(key, "expected a number >= 0 or \"inf\", got " + shown(v));
        out = v.get<double>();
    }
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, std::vector<std::string>& out,
              const Rules&...) const {
        if (!v.is_array()) fail(key, "expected a list, got " + shown(v));
        out.clear();
        for (const auto& e : v) {
            if (!e.is_string()) fail(key, "expected strings, got " + shown(e));
            out.push_back(e.get<std::string>());
        }
    }
    template <class... Rules>
    void read(const nlohmann::json& v, const char* key, std::vector<std::uint64_t>& out,
              const Rules&... rules) const {
        if (!v.is_array()) fail(key, "expected a list, got " + shown(v));
        out.clear();
        for (const auto& e : v)
            out.push_back(number(e, key, rules...));
    }

    template <class... Rules>
    std::uint64_t number(const nlohmann::json& v, const char* key, const Rules&... rules) const {
        const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
        if (!whole) fail(key, "expected an unsigned integer, got " + shown(v));
        const auto n = v.get<std::uint64_t>();
        range r;
        ((r = range_of(rules, r)), ...);
        if (n < r.min || n > r.max)
            fail(key, std::to_string(n) + " is outside [" + std::to_string(r.min) + ", " +
                          std::to_string(r.max) + "]");
        return n;
    }
    static range range_of(const range& r, const range&) { return r; }
    template <class Rule>
    static range range_of(const Rule&, const range& r) {
        return r;
    }

    template <class Names>
    void check_name(const std::string& s, const char* key, const one_of<Names>& rule) const {
        std::string all;
        for (const auto& n : rule.names) {
            if (s == n) return;
            all += (all.empty() ? "" : ", ") + std::string(n);
        }
        fail(key, "'" + printable(s.substr(0, 40)) + "' is not one of " + all);
    }
    template <class Rule>
    void check_name(const std::string&, const char*, const Rule&) const {}

    template <class Rule>
    void run_then(const Rule& rule) const {
        if constexpr (detail::is_then<Rule>::value) rule.check(*this);
    }

    static std::string shown(const nlohmann::json& v) {
        const std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return printable(s.size() > 40 ? s.substr(0, 40) + "..." : s);
    }

    const nlohmann::json& m_in;
    const std::string& m_source;
    const char* m_list;
};

// The record as a JSON object, from its one declaration `fields(writer, record)`.
template <class R, class Fields>
nlohmann::json write_fields(const R& record, Fields&& fields) {
    nlohmann::json out = nlohmann::json::object();
    json_writer w(out);
    fields(w, record);
    return out;
}

// The record from a JSON object, through the same declaration; throws Error naming `source`.
template <class Error, class R, class Fields>
void read_fields(const nlohmann::json& in, const std::string& source, R& record, Fields&& fields) {
    json_reader<Error> r(in, source);
    fields(r, record);
}

}  // namespace systolic::io
