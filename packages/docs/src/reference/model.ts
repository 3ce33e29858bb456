// What a reference page says about one package, read from its TSDoc by ./extract.ts.

/** A documented property: an option, or an event. */
export interface DocProperty {
  readonly name: string
  /** The type as written in the source. */
  readonly type: string
  readonly optional: boolean
  /** The `@defaultValue` tag, when there is one. */
  readonly defaultValue: string | undefined
  /** The unit, from the name's suffix (`leaseMs`: ms), '' when the name gives none. */
  readonly unit: string
  readonly doc: string
}

/** A documented interface or type alias, with its own properties. */
export interface DocShape {
  readonly name: string
  readonly summary: string
  /** For a type alias: its source text (e.g. a union of other option types). */
  readonly alias: string | undefined
  readonly properties: readonly DocProperty[]
}

/** A documented exported symbol other than a shape. */
export interface DocItem {
  readonly name: string
  /** A function's signature (or a constant's type), as written in the source. */
  readonly signature: string
  readonly summary: string
  /** Declared in the package's src/admin/: an operator's function. */
  readonly admin: boolean
}

/** An error code of `OutboxErrorCode`, with what it means. */
export interface DocErrorCode {
  readonly code: string
  readonly meaning: string
}

/** Everything a package's reference page shows. */
export interface PackageReference {
  /** `core`, `pg`, ...: the folder under packages/. */
  readonly dir: string
  /** `@outboxkit/core`, ... */
  readonly name: string
  readonly description: string
  readonly functions: readonly DocItem[]
  readonly classes: readonly DocItem[]
  readonly constants: readonly DocItem[]
  readonly options: readonly DocShape[]
  readonly events: readonly DocShape[]
  readonly types: readonly DocItem[]
  readonly errorCodes: readonly DocErrorCode[]
}
