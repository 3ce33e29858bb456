/** The SQL dialects outboxkit speaks: the one declaration every package imports. */
export type OutboxDialect = 'postgres' | 'mysql' | 'sqlite'
