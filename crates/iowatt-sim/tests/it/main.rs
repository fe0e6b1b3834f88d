mod mm1;
mod thermal;
