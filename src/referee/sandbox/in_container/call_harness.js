// Runs ONE `function` test of a JavaScript program, inside the sandbox only (Node, no packages).
//
// The Python harness's contract (call_harness.py), for Node: the spec {"fn_name", "args"} arrives on
// fd 3, the result goes to fd 4. The program /work/sol.js runs as a script in this context with
// CommonJS `module`, `exports` and `require` (so both `function f() {}` at the top level and
// `module.exports = { f }` work); then fn_name(...args) is called (a returned Promise is awaited)
// and its value is written as plain JSON: {"ok": true, "value": ...}, or {"ok": false, "error"}
// when it is not a JSON value (undefined, a function, a cycle, NaN and Infinity, which JSON
// would turn into null). The judge compares outside the container; the expected value never
// enters it. Anything the program throws is uncaught: exit status 1, runtime_error. Writing the
// result is the proof that the test ran (process.exit() before it leaves none: wrong_answer).
"use strict";
const fs = require("fs");
const vm = require("vm");
const Module = require("module");

const SOURCE = "/work/sol.js";

function readSpec() {
  const spec = JSON.parse(fs.readFileSync(3, "utf8"));
  fs.closeSync(3);
  return spec;
}

function plain(value, depth) {
  // JSON.stringify would turn NaN/Infinity into null and drop undefined members: refuse them.
  if (depth > 100) throw new TypeError("the value is nested too deeply");
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`${value} is not a JSON value`);
    return value;
  }
  if (typeof value === "bigint") {
    if (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
    throw new TypeError("a BigInt beyond 2^53 is not a JSON number");
  }
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1));
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out = {};
    for (const key of Object.keys(value)) out[key] = plain(value[key], depth + 1);
    return out;
  }
  throw new TypeError(`a ${typeof value} is not a JSON value`);
}

function load() {
  const mod = new Module(SOURCE, null);
  mod.filename = SOURCE;
  mod.paths = [];
  globalThis.module = mod;
  globalThis.exports = mod.exports;
  globalThis.require = (name) => mod.require(name);
  vm.runInThisContext(fs.readFileSync(SOURCE, "utf8"), { filename: SOURCE });
  return mod;
}

function find(mod, name) {
  const exported = mod.exports;
  if (exported && typeof exported[name] === "function") return exported[name];
  if (typeof exported === "function" && exported.name === name) return exported;
  // A top-level `function`, `const` or `let` of the script: names in its global scope. The name
  // was validated on the host as an identifier, so this evaluates nothing but a name.
  const found = vm.runInThisContext(`typeof ${name} === "function" ? ${name} : undefined`);
  if (found === undefined) throw new ReferenceError(`${name} is not defined`);
  return found;
}

async function main() {
  const spec = readSpec();
  const mod = load();
  const value = await find(mod, spec.fn_name)(...spec.args);
  let payload;
  try {
    payload = { ok: true, value: plain(value, 0) };
  } catch (err) {
    payload = { ok: false, error: String(err && err.message).slice(0, 500) };
  }
  fs.writeSync(4, JSON.stringify(payload));
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
