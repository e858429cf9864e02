package config

import (
	"context"
	"fmt"
	"reflect"

	"github.com/agentenv/agentenv/registry"
)

// Resolved returns a copy of c with every env:/secret: reference resolved
// ("any config string may be a reference"). The
// [stores.secret] table resolves env: references only. An unresolvable
// reference is an error naming the key and the reference, never a value.
// Show and Explain keep working on the original, so they print references.
func (c *Config) Resolved(ctx context.Context, secrets registry.SecretStore, lookupEnv func(string) (string, bool)) (*Config, error) {
	out := *c
	out.sources = c.Sources()
	out.Warnings = append([]Warning(nil), c.Warnings...)
	v := reflect.ValueOf(&out).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := tomlName(t.Field(i))
		if name == "" {
			continue
		}
		if err := resolveValue(ctx, v.Field(i), name, secrets, lookupEnv); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

func resolveValue(ctx context.Context, v reflect.Value, key string, secrets registry.SecretStore, lookupEnv func(string) (string, bool)) error {
	if key == "stores.secret" {
		secrets = nil // [stores.secret] cannot use secret:
	}
	switch v.Kind() {
	case reflect.String:
		s, err := registry.Resolve(ctx, v.String(), secrets, lookupEnv)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		v.SetString(s)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name := tomlName(t.Field(i))
			if name == "" {
				continue
			}
			if err := resolveValue(ctx, v.Field(i), key+"."+name, secrets, lookupEnv); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		cp := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			elem := reflect.New(v.Type().Elem()).Elem()
			elem.Set(iter.Value())
			if err := resolveElem(ctx, &elem, key+"."+iter.Key().String(), secrets, lookupEnv); err != nil {
				return err
			}
			cp.SetMapIndex(iter.Key(), elem)
		}
		v.Set(cp)
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		cp := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			elem := cp.Index(i)
			elem.Set(v.Index(i))
			if err := resolveElem(ctx, &elem, fmt.Sprintf("%s[%d]", key, i), secrets, lookupEnv); err != nil {
				return err
			}
		}
		v.Set(cp)
	}
	return nil
}

// resolveElem handles interface-typed elements (map[string]any values).
func resolveElem(ctx context.Context, elem *reflect.Value, key string, secrets registry.SecretStore, lookupEnv func(string) (string, bool)) error {
	if elem.Kind() != reflect.Interface || elem.IsNil() {
		return resolveValue(ctx, *elem, key, secrets, lookupEnv)
	}
	inner := reflect.New(elem.Elem().Type()).Elem()
	inner.Set(elem.Elem())
	if err := resolveValue(ctx, inner, key, secrets, lookupEnv); err != nil {
		return err
	}
	elem.Set(inner)
	return nil
}
