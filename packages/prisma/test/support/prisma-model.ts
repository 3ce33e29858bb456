/** One scalar field of a Prisma model, as the tests read it from the model text. */
export interface ModelField {
  /** The field name in Prisma Client. */
  field: string
  /** The database column: `@map("...")`, else the field name. */
  column: string
  /** The Prisma scalar type: String, Int, BigInt, Json, DateTime, Bytes. */
  type: string
  optional: boolean
  /** The native type attribute without `@db.`, e.g. `VarChar(255)`, or undefined. */
  native: string | undefined
  /** Everything after the type. */
  attrs: string
}

/** An `@@index` or `@@unique` of a model, with its fields translated to columns. */
export interface ModelIndex {
  name: string
  unique: boolean
  columns: string[]
}

/** A model block of a Prisma schema. */
export interface ParsedModel {
  name: string
  table: string
  fields: ModelField[]
  /** The `@id` column. */
  id: string
  indexes: ModelIndex[]
}

/** Reads every `model X { ... }` block of `text` (enough of the syntax for the outbox models). */
export function parseModels(text: string): ParsedModel[] {
  const models: ParsedModel[] = []
  for (const [, name, body] of text.matchAll(/^model (\w+) \{\n([\s\S]*?)^\}/gm)) {
    const fields: ModelField[] = []
    for (const [, field, type, optional, attrs = ''] of body!.matchAll(
      /^ {2}(\w+) +(String|Int|BigInt|Json|DateTime|Bytes)(\?)?(?: +(.*))?$/gm,
    )) {
      fields.push({
        field: field!,
        column: /@map\("([^"]+)"\)/.exec(attrs)?.[1] ?? field!,
        type: type!,
        optional: optional === '?',
        native: /@db\.(\w+(?:\(\d+\))?)/.exec(attrs)?.[1],
        attrs,
      })
    }
    const columnOf = (f: string) => fields.find((x) => x.field === f.trim())?.column ?? `?${f}`
    const indexes = [...body!.matchAll(/^ {2}@@(index|unique)\(\[([^\]]*)\], map: "([^"]+)"\)$/gm)].map(
      ([, kind, list, map]) => ({
        name: map!,
        unique: kind === 'unique',
        columns: list!.split(',').map(columnOf),
      }),
    )
    models.push({
      name: name!,
      table: /^ {2}@@map\("([^"]+)"\)$/m.exec(body!)?.[1] ?? name!,
      fields,
      id: fields.find((f) => /(^|\s)@id(\s|$)/.test(f.attrs))?.column ?? '?',
      indexes,
    })
  }
  return models
}
