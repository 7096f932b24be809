import type { z } from "zod";

/**
 * A value from the wire (a JSON body, a query) as the input of the use case
 * it goes to, typed by the shape that use case parses it with (`z.input`).
 * Every use case checks its own input (parseInput), so each surface gets the
 * same rules and messages and nothing is checked twice; naming the shape
 * here ties the route to the use case: a route that names a shape of
 * another type than the use case takes does not compile.
 */
export const inputOf = <S extends z.ZodType>(_shape: S, value: unknown): z.input<S> => value as z.input<S>;
