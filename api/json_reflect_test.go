package api_test

import "reflect"

func newOf(v any) any { return reflect.New(reflect.TypeOf(v)).Interface() }

func deref(p any) any { return reflect.ValueOf(p).Elem().Interface() }
