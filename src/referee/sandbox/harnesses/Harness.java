
// ---- Referee's function-test harness for Java (referee/sandbox/typed_harness.py appends it) ----
// One `function` test: the spec {"fn_name", "args"} arrives on fd 3; the method is found by
// reflection among the program's top-level classes (Solution first), each JSON argument is
// converted to its parameter's declared type (generic types included), the method is called
// (on a new instance unless it is static), and its value goes to fd 4 as {"ok": true, "value"}
// ({"ok": false, "error"} when an argument does not fit or the value is no JSON value). What the
// method throws is uncaught: runtime_error, as in the other languages.
class Main {
    static final class Unfit extends RuntimeException {
        Unfit(String why) { super(why); }
    }

    // ---- JSON -------------------------------------------------------------------------------
    static final class Parser {
        final String s;
        int i = 0;
        Parser(String s) { this.s = s; }
        void skip() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }
        Object value(int depth) {
            if (depth > 200) throw new Unfit("the spec is nested too deeply");
            skip();
            char c = s.charAt(i);
            if (c == '{') {
                java.util.LinkedHashMap<String, Object> m = new java.util.LinkedHashMap<>();
                i++;
                skip();
                if (s.charAt(i) == '}') { i++; return m; }
                while (true) {
                    skip();
                    String key = string();
                    skip();
                    i++; // ':'
                    m.put(key, value(depth + 1));
                    skip();
                    if (s.charAt(i++) == '}') return m;
                }
            }
            if (c == '[') {
                java.util.ArrayList<Object> a = new java.util.ArrayList<>();
                i++;
                skip();
                if (s.charAt(i) == ']') { i++; return a; }
                while (true) {
                    a.add(value(depth + 1));
                    skip();
                    if (s.charAt(i++) == ']') return a;
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
            if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
            if (s.startsWith("null", i)) { i += 4; return null; }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String text = s.substring(start, i);
            if (text.contains(".") || text.contains("e") || text.contains("E")) return Double.valueOf(text);
            return new java.math.BigInteger(text);
        }
        String string() {
            StringBuilder out = new StringBuilder();
            i++;
            while (s.charAt(i) != '"') {
                char c = s.charAt(i++);
                if (c != '\\') { out.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': out.append('\n'); break;
                    case 't': out.append('\t'); break;
                    case 'r': out.append('\r'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'u': out.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: out.append(e);
                }
            }
            i++;
            return out.toString();
        }
    }

    // ---- JSON -> the parameter's type ---------------------------------------------------------
    static java.math.BigInteger integer(Object v) {
        if (!(v instanceof java.math.BigInteger)) throw new Unfit("expected an integer");
        return (java.math.BigInteger) v;
    }

    static long ranged(Object v, long min, long max) {
        java.math.BigInteger b = integer(v);
        if (b.compareTo(java.math.BigInteger.valueOf(min)) < 0 || b.compareTo(java.math.BigInteger.valueOf(max)) > 0)
            throw new Unfit("an integer out of the parameter's range");
        return b.longValue();
    }

    static Object convert(Object v, java.lang.reflect.Type type) {
        if (type instanceof java.lang.reflect.ParameterizedType) {
            java.lang.reflect.ParameterizedType p = (java.lang.reflect.ParameterizedType) type;
            Class<?> raw = (Class<?>) p.getRawType();
            java.lang.reflect.Type[] of = p.getActualTypeArguments();
            if (java.util.Map.class.isAssignableFrom(raw)) {
                if (!(v instanceof java.util.Map)) throw new Unfit("expected an object");
                java.util.Map<Object, Object> out = java.util.SortedMap.class.isAssignableFrom(raw)
                        ? new java.util.TreeMap<>() : new java.util.HashMap<>();
                for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
                    Object key = e.getKey();
                    if (of[0] != String.class) key = convert(new Parser((String) key).value(0), of[0]);
                    out.put(key, convert(e.getValue(), of[1]));
                }
                return out;
            }
            if (java.util.Collection.class.isAssignableFrom(raw)) {
                if (!(v instanceof java.util.List)) throw new Unfit("expected an array");
                java.util.Collection<Object> out = java.util.Set.class.isAssignableFrom(raw)
                        ? (java.util.SortedSet.class.isAssignableFrom(raw) ? new java.util.TreeSet<>() : new java.util.HashSet<>())
                        : java.util.Deque.class.isAssignableFrom(raw) || java.util.Queue.class.isAssignableFrom(raw)
                                ? new java.util.ArrayDeque<>() : new java.util.ArrayList<>();
                for (Object item : (java.util.List<?>) v) out.add(convert(item, of[0]));
                return out;
            }
            return convert(v, raw);
        }
        Class<?> c = (Class<?>) type;
        if (c == int.class || c == Integer.class) return v == null && c == Integer.class ? null : (int) ranged(v, Integer.MIN_VALUE, Integer.MAX_VALUE);
        if (c == long.class || c == Long.class) return v == null && c == Long.class ? null : ranged(v, Long.MIN_VALUE, Long.MAX_VALUE);
        if (c == short.class || c == Short.class) return (short) ranged(v, Short.MIN_VALUE, Short.MAX_VALUE);
        if (c == byte.class || c == Byte.class) return (byte) ranged(v, Byte.MIN_VALUE, Byte.MAX_VALUE);
        if (c == java.math.BigInteger.class) return integer(v);
        if (c == double.class || c == Double.class || c == float.class || c == Float.class) {
            if (v == null && !c.isPrimitive()) return null;
            if (!(v instanceof Number)) throw new Unfit("expected a number");
            double d = ((Number) v).doubleValue();
            return c == float.class || c == Float.class ? (Object) (float) d : (Object) d;
        }
        if (c == boolean.class || c == Boolean.class) {
            if (!(v instanceof Boolean)) throw new Unfit("expected a boolean");
            return v;
        }
        if (c == char.class || c == Character.class) {
            if (!(v instanceof String) || ((String) v).length() != 1) throw new Unfit("expected a one-character string");
            return ((String) v).charAt(0);
        }
        if (c == String.class) {
            if (v == null) return null;
            if (!(v instanceof String)) throw new Unfit("expected a string");
            return v;
        }
        if (c.isArray()) {
            if (!(v instanceof java.util.List)) throw new Unfit("expected an array");
            java.util.List<?> items = (java.util.List<?>) v;
            Object out = java.lang.reflect.Array.newInstance(c.getComponentType(), items.size());
            for (int k = 0; k < items.size(); k++)
                java.lang.reflect.Array.set(out, k, convert(items.get(k), c.getComponentType()));
            return out;
        }
        if (c == Object.class) return v;
        if (java.util.List.class.isAssignableFrom(c) || java.util.Map.class.isAssignableFrom(c))
            throw new Unfit("a raw " + c.getSimpleName() + " parameter: declare its element types");
        throw new Unfit("a " + c.getName() + " parameter cannot be read from JSON");
    }

    // ---- the method's value -> JSON -----------------------------------------------------------
    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        out.append('"');
    }

    static void put(StringBuilder out, Object v, int depth) {
        if (depth > 200) throw new Unfit("the value is nested too deeply");
        if (v == null) { out.append("null"); return; }
        if (v instanceof Boolean) { out.append(v); return; }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) throw new Unfit("a NaN or infinite float is not a JSON value");
            out.append(v instanceof Float ? Double.toString(Double.parseDouble(v.toString())) : Double.toString(d));
            return;
        }
        if (v instanceof Number) { out.append(v); return; }
        if (v instanceof Character) { string(out, v.toString()); return; }
        if (v instanceof CharSequence) { string(out, v.toString()); return; }
        if (v.getClass().isArray()) {
            out.append('[');
            for (int k = 0; k < java.lang.reflect.Array.getLength(v); k++) {
                if (k > 0) out.append(',');
                put(out, java.lang.reflect.Array.get(v, k), depth + 1);
            }
            out.append(']');
            return;
        }
        if (v instanceof java.util.Map) {
            out.append('{');
            boolean first = true;
            for (java.util.Map.Entry<?, ?> e : ((java.util.Map<?, ?>) v).entrySet()) {
                if (!first) out.append(',');
                first = false;
                Object key = e.getKey();
                if (!(key instanceof String || key instanceof Number || key instanceof Character))
                    throw new Unfit("a map key that is no string or number is not a JSON object key");
                string(out, key.toString());
                out.append(':');
                put(out, e.getValue(), depth + 1);
            }
            out.append('}');
            return;
        }
        if (v instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object item : (Iterable<?>) v) {
                if (!first) out.append(',');
                first = false;
                put(out, item, depth + 1);
            }
            out.append(']');
            return;
        }
        throw new Unfit("a " + v.getClass().getName() + " is not a JSON value");
    }

    // ---- the call -----------------------------------------------------------------------------
    static java.lang.reflect.Method find(String name, int arity) {
        java.util.List<Class<?>> classes = new java.util.ArrayList<>();
        try {
            classes.add(Class.forName("Solution"));
        } catch (ClassNotFoundException absent) {
            // no Solution class: look through the others
        }
        try (java.util.jar.JarFile jar = new java.util.jar.JarFile(
                Main.class.getProtectionDomain().getCodeSource().getLocation().getPath())) {
            for (java.util.Enumeration<java.util.jar.JarEntry> e = jar.entries(); e.hasMoreElements();) {
                String entry = e.nextElement().getName();
                if (entry.endsWith(".class") && !entry.contains("$") && !entry.contains("/"))
                    classes.add(Class.forName(entry.substring(0, entry.length() - 6)));
            }
        } catch (Exception unreadable) {
            // the jar cannot be listed: Solution alone
        }
        for (Class<?> c : classes) {
            if (c == Main.class) continue;
            for (java.lang.reflect.Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == arity && !m.isSynthetic()) return m;
            }
        }
        throw new Unfit("no method " + name + " taking " + arity + " arguments in the program");
    }

    // fd 3 and 4 by number: /proc/self/fd is closed to a process that changed its uid (not
    // dumpable), and Java opens no descriptor by number; the harness runs with java.io opened
    // to it (--add-opens, typed_harness.function_language) to set one's `fd` field.
    static java.io.FileDescriptor descriptor(int number) throws ReflectiveOperationException {
        java.io.FileDescriptor fd = new java.io.FileDescriptor();
        java.lang.reflect.Field field = java.io.FileDescriptor.class.getDeclaredField("fd");
        field.setAccessible(true);
        field.setInt(fd, number);
        return fd;
    }

    public static void main(String[] argv) throws Throwable {
        String text;
        // Buffered: FileInputStream's own readAllBytes seeks, which a pipe refuses.
        try (java.io.InputStream spec = new java.io.BufferedInputStream(new java.io.FileInputStream(descriptor(3)))) {
            text = new String(spec.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        @SuppressWarnings("unchecked")
        java.util.Map<String, Object> spec = (java.util.Map<String, Object>) new Parser(text).value(0);
        String name = (String) spec.get("fn_name");
        java.util.List<?> args = spec.get("args") == null ? new java.util.ArrayList<>() : (java.util.List<?>) spec.get("args");
        StringBuilder out = new StringBuilder();
        Object value;
        try {
            java.lang.reflect.Method m = find(name, args.size());
            m.setAccessible(true);
            java.lang.reflect.Type[] types = m.getGenericParameterTypes();
            Object[] values = new Object[args.size()];
            for (int k = 0; k < values.length; k++) values[k] = convert(args.get(k), types[k]);
            Object target = null;
            if (!java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                java.lang.reflect.Constructor<?> make = m.getDeclaringClass().getDeclaredConstructor();
                make.setAccessible(true);
                target = make.newInstance();
            }
            try {
                value = m.invoke(target, values);
            } catch (java.lang.reflect.InvocationTargetException thrown) {
                throw thrown.getCause(); // the method's own exception: uncaught, runtime_error
            }
            out.append("{\"ok\":true,\"value\":");
            put(out, value, 0);
            out.append('}');
        } catch (Unfit unfit) {
            out.setLength(0);
            out.append("{\"ok\":false,\"error\":");
            string(out, unfit.getMessage());
            out.append('}');
        }
        System.out.flush();
        try (java.io.FileOutputStream result = new java.io.FileOutputStream(descriptor(4))) {
            result.write(out.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }
}
