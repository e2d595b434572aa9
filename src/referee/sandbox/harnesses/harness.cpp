
// ---- Referee's function-test harness for C++ (referee/sandbox/typed_harness.py appends it) ----
// One `function` test: the spec {"fn_name", "args"} arrives on fd 3; each JSON argument is
// converted to the type the function declares (deduced from its pointer: no signature is
// parsed), the function is called, and its value goes to fd 4 as {"ok": true, "value": ...}
// ({"ok": false, "error"} when an argument does not fit its parameter or the value is no JSON
// value). The judge compares outside the container; the expected value never enters it.
// Whatever the function throws is uncaught: runtime_error, as in the other languages.
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace referee_harness {

struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool flag = false;
    std::string text;  // a number's literal, or a string's value
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> fields;
};

struct Unfit : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Parser {
  public:
    explicit Parser(const std::string& s) : s_(s) {}
    Json document() {
        Json value = parse(0);
        skip();
        if (i_ != s_.size()) throw Unfit("the spec is not one JSON value");
        return value;
    }

  private:
    const std::string& s_;
    size_t i_ = 0;

    void skip() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
    }
    bool eat(const char* word) {
        size_t n = std::char_traits<char>::length(word);
        if (s_.compare(i_, n, word) != 0) return false;
        i_ += n;
        return true;
    }
    static void utf8(std::string& out, unsigned long cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }
    unsigned long hex4() {
        if (i_ + 4 > s_.size()) throw Unfit("bad \\u escape");
        unsigned long cp = std::stoul(s_.substr(i_, 4), nullptr, 16);
        i_ += 4;
        return cp;
    }
    std::string str() {
        std::string out;
        ++i_;  // the opening quote
        while (i_ < s_.size() && s_[i_] != '"') {
            char c = s_[i_++];
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = s_.at(i_++);
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    unsigned long cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && eat("\\u")) cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4() - 0xDC00);
                    utf8(out, cp);
                    break;
                }
                default: out += e;
            }
        }
        ++i_;  // the closing quote
        return out;
    }
    Json parse(int depth) {
        if (depth > 200) throw Unfit("the spec is nested too deeply");
        skip();
        Json j;
        if (i_ >= s_.size()) throw Unfit("the spec ended early");
        char c = s_[i_];
        if (c == '{') {
            j.kind = Json::Object;
            ++i_;
            skip();
            if (s_[i_] == '}') { ++i_; return j; }
            while (true) {
                skip();
                std::string key = str();
                skip();
                ++i_;  // ':'
                j.fields.emplace_back(key, parse(depth + 1));
                skip();
                if (s_[i_++] == '}') return j;
            }
        }
        if (c == '[') {
            j.kind = Json::Array;
            ++i_;
            skip();
            if (s_[i_] == ']') { ++i_; return j; }
            while (true) {
                j.items.push_back(parse(depth + 1));
                skip();
                if (s_[i_++] == ']') return j;
            }
        }
        if (c == '"') { j.kind = Json::String; j.text = str(); return j; }
        if (eat("true")) { j.kind = Json::Bool; j.flag = true; return j; }
        if (eat("false")) { j.kind = Json::Bool; return j; }
        if (eat("null")) return j;
        size_t start = i_;
        while (i_ < s_.size() && std::string("+-0123456789.eE").find(s_[i_]) != std::string::npos) ++i_;
        j.kind = Json::Number;
        j.text = s_.substr(start, i_ - start);
        return j;
    }
};

// ---- JSON -> the parameter's type --------------------------------------------------------

template <class T> struct From;

template <class T> T from(const Json& j) { return From<std::decay_t<T>>::get(j); }

template <class T> struct is_vector_like : std::false_type {};
template <class T, class A> struct is_vector_like<std::vector<T, A>> : std::true_type {};
template <class T, class A> struct is_vector_like<std::deque<T, A>> : std::true_type {};
template <class T, class A> struct is_vector_like<std::list<T, A>> : std::true_type {};

template <class T> struct From {
    static T get(const Json& j) {
        if constexpr (std::is_same_v<T, bool>) {
            if (j.kind != Json::Bool) throw Unfit("expected a boolean");
            return j.flag;
        } else if constexpr (std::is_same_v<T, char>) {
            if (j.kind != Json::String || j.text.size() != 1) throw Unfit("expected a one-character string");
            return j.text[0];
        } else if constexpr (std::is_integral_v<T>) {
            if (j.kind != Json::Number || j.text.find_first_of(".eE") != std::string::npos)
                throw Unfit("expected an integer");
            errno = 0;
            char* end = nullptr;
            if constexpr (std::is_signed_v<T>) {
                long long v = std::strtoll(j.text.c_str(), &end, 10);
                if (errno || v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
                    throw Unfit("an integer out of the parameter's range");
                return T(v);
            } else {
                if (j.text[0] == '-') throw Unfit("a negative integer for an unsigned parameter");
                unsigned long long v = std::strtoull(j.text.c_str(), &end, 10);
                if (errno || v > std::numeric_limits<T>::max()) throw Unfit("an integer out of the parameter's range");
                return T(v);
            }
        } else if constexpr (std::is_floating_point_v<T>) {
            if (j.kind != Json::Number) throw Unfit("expected a number");
            return T(std::strtod(j.text.c_str(), nullptr));
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (j.kind != Json::String) throw Unfit("expected a string");
            return j.text;
        } else if constexpr (is_vector_like<T>::value) {
            if (j.kind != Json::Array) throw Unfit("expected an array");
            T out;
            for (const Json& item : j.items) out.push_back(from<typename T::value_type>(item));
            return out;
        } else {
            static_assert(sizeof(T) == 0, "this parameter type cannot be read from JSON by the harness");
        }
    }
};

template <class T, size_t N> struct From<std::array<T, N>> {
    static std::array<T, N> get(const Json& j) {
        if (j.kind != Json::Array || j.items.size() != N) throw Unfit("expected an array of the array's size");
        std::array<T, N> out{};
        for (size_t k = 0; k < N; ++k) out[k] = from<T>(j.items[k]);
        return out;
    }
};

template <class T, class C, class A> struct From<std::set<T, C, A>> {
    static std::set<T, C, A> get(const Json& j) {
        if (j.kind != Json::Array) throw Unfit("expected an array");
        std::set<T, C, A> out;
        for (const Json& item : j.items) out.insert(from<T>(item));
        return out;
    }
};

template <class T, class H, class E, class A> struct From<std::unordered_set<T, H, E, A>> {
    static std::unordered_set<T, H, E, A> get(const Json& j) {
        if (j.kind != Json::Array) throw Unfit("expected an array");
        std::unordered_set<T, H, E, A> out;
        for (const Json& item : j.items) out.insert(from<T>(item));
        return out;
    }
};

template <class K> K key_from(const std::string& key) {
    if constexpr (std::is_same_v<K, std::string>) {
        return key;
    } else {
        Json j;  // JSON object keys are strings: "3" -> 3 for integer-keyed maps
        j.kind = Json::Number;
        j.text = key;
        return from<K>(j);
    }
}

template <class Map> Map map_from(const Json& j) {
    if (j.kind != Json::Object) throw Unfit("expected an object");
    Map out;
    for (const auto& [key, value] : j.fields)
        out.emplace(key_from<typename Map::key_type>(key), from<typename Map::mapped_type>(value));
    return out;
}

template <class K, class V, class C, class A> struct From<std::map<K, V, C, A>> {
    static std::map<K, V, C, A> get(const Json& j) { return map_from<std::map<K, V, C, A>>(j); }
};

template <class K, class V, class H, class E, class A> struct From<std::unordered_map<K, V, H, E, A>> {
    static std::unordered_map<K, V, H, E, A> get(const Json& j) {
        return map_from<std::unordered_map<K, V, H, E, A>>(j);
    }
};

template <class A, class B> struct From<std::pair<A, B>> {
    static std::pair<A, B> get(const Json& j) {
        if (j.kind != Json::Array || j.items.size() != 2) throw Unfit("expected a pair: an array of 2");
        return {from<A>(j.items[0]), from<B>(j.items[1])};
    }
};

template <class... T> struct From<std::tuple<T...>> {
    template <size_t... I> static std::tuple<T...> each(const Json& j, std::index_sequence<I...>) {
        return std::tuple<T...>{from<T>(j.items[I])...};
    }
    static std::tuple<T...> get(const Json& j) {
        if (j.kind != Json::Array || j.items.size() != sizeof...(T)) throw Unfit("expected a tuple's array");
        return each(j, std::index_sequence_for<T...>{});
    }
};

template <class T> struct From<std::optional<T>> {
    static std::optional<T> get(const Json& j) {
        if (j.kind == Json::Null) return std::nullopt;
        return from<T>(j);
    }
};

// ---- the function's value -> JSON --------------------------------------------------------

void put_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += char(c);
        }
    }
    out += '"';
}

template <class T> void put(std::string& out, const T& v);

template <class T, class = void> struct is_iterable : std::false_type {};
template <class T>
struct is_iterable<T, std::void_t<decltype(std::begin(std::declval<const T&>())), decltype(std::end(std::declval<const T&>()))>>
    : std::true_type {};
template <class T, class = void> struct is_mapping : std::false_type {};
template <class T> struct is_mapping<T, std::void_t<typename T::mapped_type>> : std::true_type {};
template <class T> struct is_tuple_like : std::false_type {};
template <class A, class B> struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... T> struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

template <class K> std::string key_text(const K& key) {
    if constexpr (std::is_same_v<K, std::string>) {
        return key;
    } else if constexpr (std::is_integral_v<K> && !std::is_same_v<K, bool>) {
        return std::to_string(key);
    } else {
        static_assert(sizeof(K) == 0, "a map's key must be a string or an integer to be a JSON object key");
    }
}

template <class T> void put(std::string& out, const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        out += v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, char>) {
        put_string(out, std::string(1, v));
    } else if constexpr (std::is_integral_v<T>) {
        out += std::to_string(v);
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!std::isfinite(double(v))) throw Unfit("a NaN or infinite float is not a JSON value");
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", double(v));
        out += buf;
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, const char*> || std::is_same_v<T, char*>) {
        put_string(out, std::string(v));
    } else if constexpr (is_optional<T>::value) {
        if (v) put(out, *v); else out += "null";
    } else if constexpr (is_tuple_like<T>::value) {
        out += '[';
        bool first = true;
        std::apply([&](const auto&... item) { ((out += first ? "" : ",", first = false, put(out, item)), ...); }, v);
        out += ']';
    } else if constexpr (is_mapping<T>::value) {
        out += '{';
        bool first = true;
        for (const auto& [key, value] : v) {
            if (!first) out += ',';
            first = false;
            put_string(out, key_text(key));
            out += ':';
            put(out, value);
        }
        out += '}';
    } else if constexpr (is_iterable<T>::value) {
        out += '[';
        bool first = true;
        for (const auto& item : v) {
            if (!first) out += ',';
            first = false;
            put<std::decay_t<decltype(item)>>(out, item);
        }
        out += ']';
    } else {
        static_assert(sizeof(T) == 0, "this return type cannot be written as JSON by the harness");
    }
}

// ---- the call ----------------------------------------------------------------------------

template <class... A> std::tuple<std::decay_t<A>...> arguments(const Json& args) {
    if (args.kind != Json::Array || args.items.size() != sizeof...(A))
        throw Unfit("the test passes " + std::to_string(args.items.size()) + " arguments; the function takes " +
                    std::to_string(sizeof...(A)));
    return From<std::tuple<std::decay_t<A>...>>::each(args, std::index_sequence_for<A...>{});
}

template <class R, class Tuple, class F> std::string result(F&& invoke, Tuple& values) {
    std::string out = "{\"ok\":true,\"value\":";
    if constexpr (std::is_void_v<R>) {
        std::apply(invoke, values);
        out += "null";
    } else {
        R value = std::apply(invoke, values);
        put(out, value);
    }
    return out + "}";
}

template <class R, class... A> std::string call(R (*f)(A...), const Json& args) {
    auto values = arguments<A...>(args);
    return result<R>([&](auto&... xs) -> R { return f(xs...); }, values);
}

template <class C, class R, class... A> std::string call(R (C::*f)(A...), const Json& args) {
    auto values = arguments<A...>(args);
    C object{};
    return result<R>([&](auto&... xs) -> R { return (object.*f)(xs...); }, values);
}

template <class C, class R, class... A> std::string call(R (C::*f)(A...) const, const Json& args) {
    auto values = arguments<A...>(args);
    const C object{};
    return result<R>([&](auto&... xs) -> R { return (object.*f)(xs...); }, values);
}

std::string read_spec() {
    std::string data;
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(3, buf, sizeof buf)) > 0) data.append(buf, size_t(n));
    ::close(3);
    return data;
}

void write_result(const std::string& payload) {
    size_t done = 0;
    while (done < payload.size()) {
        ssize_t n = ::write(4, payload.data() + done, payload.size() - done);
        if (n <= 0) std::exit(1);
        done += size_t(n);
    }
}

std::string dispatch(const std::string& name, const Json& args);

}  // namespace referee_harness

int main() {
    using namespace referee_harness;
    Json spec = Parser(read_spec()).document();
    std::string name;
    const Json* args = nullptr;
    for (const auto& [key, value] : spec.fields) {
        if (key == "fn_name") name = value.text;
        if (key == "args") args = &value;
    }
    Json none;
    none.kind = Json::Array;
    std::string payload;
    try {
        payload = dispatch(name, args ? *args : none);
    } catch (const Unfit& e) {
        payload = "{\"ok\":false,\"error\":";
        put_string(payload, e.what());
        payload += "}";
    }
    std::fflush(stdout);
    write_result(payload);
    return 0;
}
