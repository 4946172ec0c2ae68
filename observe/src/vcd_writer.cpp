#include "systolic/observe/vcd_writer.h"

#include <charconv>
#include <cstring>
#include <map>
#include <stdexcept>

namespace systolic::observe {
namespace {

// A scope tree in declaration order, to print $scope blocks from the dotted names.
struct scope_node {
    std::vector<std::pair<std::string, scope_node>> children;
    std::vector<std::size_t> vars;

    scope_node& child(const std::string& name) {
        // Variables come grouped by scope, so the last child is almost always the one.
        if (!children.empty() && children.back().first == name) return children.back().second;
        for (auto& c : children)
            if (c.first == name) return c.second;
        children.emplace_back(name, scope_node{});
        return children.back().second;
    }
};

}  // namespace

std::string vcd_writer::code_for(std::size_t index) {
    // Printable ASCII '!' .. '~' (94 characters), little-endian digits.
    std::string code;
    do {
        code.push_back(static_cast<char>('!' + index % 94));
        index /= 94;
    } while (index > 0);
    return code;
}

vcd_writer::id vcd_writer::add_wire(const std::string& path, unsigned width, const char* kind) {
    if (width == 0 || width > 64) throw std::invalid_argument("vcd_writer: wire width must be 1..64");
    var v;
    v.path = path;
    v.code = code_for(m_vars.size());
    v.width = width;
    v.kind = kind;
    v.mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
    m_vars.push_back(std::move(v));
    return id(m_vars.size() - 1);
}

vcd_writer::id vcd_writer::add_real(const std::string& path, bool single) {
    var v;
    v.path = path;
    v.code = code_for(m_vars.size());
    v.width = 64;
    v.kind = "real";
    v.real = true;
    v.single = single;
    v.mask = ~std::uint64_t{0};
    m_vars.push_back(std::move(v));
    return id(m_vars.size() - 1);
}

vcd_writer::id vcd_writer::add_string(const std::string& path, const std::string& initial) {
    var v;
    v.path = path;
    v.code = code_for(m_vars.size());
    v.width = 1;
    v.kind = "string";
    v.text = true;
    v.value = initial;
    m_vars.push_back(std::move(v));
    return id(m_vars.size() - 1);
}

void vcd_writer::set_string(id v, std::string_view text) {
    var& x = m_vars[v];
    if (text == x.value) return;
    x.value.assign(text.data(), text.size());
    emit_time();
    m_out.append('s');
    m_out.append(text);
    m_out.append(' ');
    m_out.append(x.code);
    m_out.append('\n');
}

void vcd_writer::end_definitions() {
    std::string h;
    h += "$date\n    (simulated)\n$end\n$version\n    " + m_version + "\n$end\n";
    for (const auto& c : m_comments)
        h += "$comment\n    " + c + "\n$end\n";
    h += "$timescale " + m_timescale + " $end\n";
    scope_node root;
    for (std::size_t i = 0; i < m_vars.size(); ++i) {
        const std::string& p = m_vars[i].path;
        scope_node* node = &root;
        std::size_t from = 0;
        for (std::size_t dot; (dot = p.find('.', from)) != std::string::npos; from = dot + 1)
            node = &node->child(p.substr(from, dot - from));
        node->vars.push_back(i);
    }
    // Iterative printing would be longer; the depth is the module hierarchy's (a handful).
    struct printer {
        const std::vector<var>& vars;
        std::string& out;
        void print(const scope_node& n) {
            for (std::size_t i : n.vars) {
                const var& v = vars[i];
                const std::string leaf = v.path.substr(v.path.rfind('.') + 1);
                out +=
                    "$var " + std::string(v.kind) + " " + std::to_string(v.width) + " " + v.code + " " + leaf;
                if (!v.real && !v.text && v.width > 1) out += " [" + std::to_string(v.width - 1) + ":0]";
                out += " $end\n";
            }
            for (const auto& c : n.children) {
                out += "$scope module " + c.first + " $end\n";
                print(c.second);
                out += "$upscope $end\n";
            }
        }
    };
    printer{m_vars, h}.print(root);
    h += "$enddefinitions $end\n#0\n$dumpvars\n";
    for (const var& v : m_vars) {
        if (v.text)
            h += "s" + v.value + " " + v.code + "\n";
        else if (v.real)
            h += "r0 " + v.code + "\n";
        else if (v.width == 1)
            h += "0" + v.code + "\n";
        else
            h += "b0 " + v.code + "\n";
    }
    h += "$end\n";
    m_out.append(h);
    for (var& v : m_vars)  // the names are in the header now; a large dump keeps only the codes
        std::string().swap(v.path);
    m_time_started = true;
    m_written_time = 0;
}

void vcd_writer::write_time() {
    char* p = m_out.reserve(24);
    p[0] = '#';
    const auto r = std::to_chars(p + 1, p + 23, m_time);
    *r.ptr = '\n';
    m_out.commit(std::size_t(r.ptr + 1 - p));
    m_written_time = m_time;
    m_time_started = true;
}

void vcd_writer::emit_wire(const var& x, std::uint64_t bits) {
    emit_time();
    const std::size_t code = x.code.size();
    char* p = m_out.reserve(68 + code);
    std::size_t n = 0;
    if (x.width == 1) {
        p[n++] = bits ? '1' : '0';
    } else {
        p[n++] = 'b';
        // Leading zeros dropped: a reader extends with 0.
        int top = bits == 0 ? 0 : 63 - __builtin_clzll(bits);
        for (int b = top; b >= 0; --b)
            p[n++] = static_cast<char>('0' + ((bits >> b) & 1));
        p[n++] = ' ';
    }
    std::memcpy(p + n, x.code.data(), code);
    n += code;
    p[n++] = '\n';
    m_out.commit(n);
}

void vcd_writer::set_real(id v, double value) {
    var& x = m_vars[v];
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    if (bits == x.bits) return;
    x.bits = bits;
    emit_time();
    char* p = m_out.reserve(40 + x.code.size());
    std::size_t n = 0;
    p[n++] = 'r';
    if (value != value) {  // VCD has no NaN; GTKWave reads "nan"
        std::memcpy(p + n, "nan", 3);
        n += 3;
    } else {
        const auto r = x.single ? std::to_chars(p + n, p + 36, static_cast<float>(value))
                                : std::to_chars(p + n, p + 36, value);
        n = std::size_t(r.ptr - p);
    }
    p[n++] = ' ';
    std::memcpy(p + n, x.code.data(), x.code.size());
    n += x.code.size();
    p[n++] = '\n';
    m_out.commit(n);
}

std::string vcd_writer::finish() {
    return m_out.finish();
}

}  // namespace systolic::observe
