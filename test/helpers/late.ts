// A stand-in for a value a before() hook makes: a test file can name it where it declares its setup
// (`const { model } = useX()`) and use it in its tests as if it were the value itself.

/** Every property read, write and method call on the result goes to what `get` returns at that moment. */
export function late<T extends object>(get: () => T): T {
  return new Proxy({} as T, {
    get(_, key) {
      const value = get();
      const member = Reflect.get(value, key, value);
      return typeof member === 'function' ? member.bind(value) : member;
    },
    set: (_, key, v) => Reflect.set(get(), key, v),
    has: (_, key) => Reflect.has(get(), key),
  });
}
