
// ---- Referee's function-test harness for Go (referee/sandbox/typed_harness.py appends it) ----
// One `function` test: the spec {"fn_name", "args"} arrives on fd 3; each JSON argument is
// decoded into its parameter's type (reflection: encoding/json does the conversion and says
// when a value does not fit), the function is called, and its value goes to fd 4 as
// {"ok": true, "value": ...} ({"ok": false, "error"} when an argument does not fit or the value
// is no JSON value). Several results are an array; nil slices and maps are written as [] and {}
// (Go's idiom for "empty", which encoding/json would write as null). A panic is uncaught:
// runtime_error, as in the other languages.

type refereeUnfit struct{ why string }

func refereeFail(why string) { panic(refereeUnfit{why}) }

// refereePlain: the value as plain JSON data (nil slices and maps empty, pointers followed).
func refereePlain(v refereeReflect.Value, depth int) interface{} {
	if depth > 200 {
		refereeFail("the value is nested too deeply")
	}
	switch v.Kind() {
	case refereeReflect.Invalid:
		return nil
	case refereeReflect.Ptr, refereeReflect.Interface:
		if v.IsNil() {
			return nil
		}
		return refereePlain(v.Elem(), depth+1)
	case refereeReflect.Slice, refereeReflect.Array:
		if v.Kind() == refereeReflect.Slice && v.Type().Elem().Kind() == refereeReflect.Uint8 {
			return string(v.Bytes()) // []byte: text
		}
		items := make([]interface{}, v.Len())
		for i := range items {
			items[i] = refereePlain(v.Index(i), depth+1)
		}
		return items
	case refereeReflect.Map:
		out := make(map[string]interface{}, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			key, err := refereeJSON.Marshal(iter.Key().Interface())
			if err != nil {
				refereeFail("a map key that is no JSON value")
			}
			text := string(key)
			if len(text) > 1 && text[0] == '"' {
				var s string
				_ = refereeJSON.Unmarshal(key, &s)
				text = s
			}
			out[text] = refereePlain(iter.Value(), depth+1)
		}
		return out
	}
	return v.Interface()
}

func refereeWrite(payload []byte) {
	result := refereeOS.NewFile(4, "result")
	for len(payload) > 0 {
		n, err := result.Write(payload)
		if err != nil {
			refereeOS.Exit(1)
		}
		payload = payload[n:]
	}
	result.Close()
}

func refereeRefuse(why string) {
	payload, _ := refereeJSON.Marshal(map[string]interface{}{"ok": false, "error": why})
	refereeWrite(payload)
}

func main() {
	specFile := refereeOS.NewFile(3, "spec")
	data, err := refereeIO.ReadAll(specFile)
	specFile.Close()
	if err != nil {
		refereeOS.Exit(1)
	}
	var spec struct {
		FnName string                   `json:"fn_name"`
		Args   []refereeJSON.RawMessage `json:"args"`
	}
	if err := refereeJSON.Unmarshal(data, &spec); err != nil {
		refereeOS.Exit(1)
	}
	fn, found := refereeFunctions[spec.FnName]
	if !found {
		refereeRefuse("the test calls no function of the program: " + spec.FnName)
		return
	}
	f := refereeReflect.ValueOf(fn)
	t := f.Type()
	if t.NumIn() != len(spec.Args) || t.IsVariadic() {
		refereeRefuse("the test's arguments do not match the function's parameters")
		return
	}
	args := make([]refereeReflect.Value, len(spec.Args))
	for i, raw := range spec.Args {
		target := refereeReflect.New(t.In(i))
		if err := refereeJSON.Unmarshal(raw, target.Interface()); err != nil {
			refereeRefuse("argument " + t.In(i).String() + ": " + err.Error())
			return
		}
		args[i] = target.Elem()
	}
	results := f.Call(args) // a panic here is the program's: uncaught
	var value interface{}
	payload, err := func() (out []byte, err error) {
		defer func() {
			if r := recover(); r != nil {
				unfit, ok := r.(refereeUnfit)
				if !ok {
					panic(r)
				}
				err = refereeUnfitError(unfit.why)
			}
		}()
		switch len(results) {
		case 0:
			value = nil
		case 1:
			value = refereePlain(results[0], 0)
		default:
			items := make([]interface{}, len(results))
			for i, r := range results {
				items[i] = refereePlain(r, 0)
			}
			value = items
		}
		return refereeJSON.Marshal(map[string]interface{}{"ok": true, "value": value})
	}()
	if err != nil {
		refereeRefuse(err.Error())
		return
	}
	refereeWrite(payload)
}

type refereeUnfitError string

func (e refereeUnfitError) Error() string { return string(e) }
