// Prisma 7 reads the database URL for its CLI (migrate, studio) from here, not from the schema.
import { defineConfig } from 'prisma/config'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' },
})
