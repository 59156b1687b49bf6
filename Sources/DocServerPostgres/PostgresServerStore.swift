internal import PostgresNIO
