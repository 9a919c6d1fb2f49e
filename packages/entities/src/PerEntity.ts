/**
 * For functions made once per entity (thousands live on a runner): `perEntity(f)` is `f`, made as a
 * call's argument so that the loader does not name it. The services run through tsx, whose esbuild
 * keeps names (`keepNames`): a function bound to a name (`const f = () => ...`, `{ f: () => ... }`)
 * becomes `__name(() => ..., "f")`, which redefines the function's `name` and so turns the function
 * object's properties into a dictionary: 256 bytes more per function, per entity, ~9 KiB of an idle
 * Channel entity's 41 (bench/RESULTS.md 4e). A call's argument, an inline callback or a method
 * (`{ f() {} }`) is not renamed. Stack traces show such a function as anonymous.
 */
export const perEntity = <F extends (...args: ReadonlyArray<never>) => unknown>(f: F): F => f
